package osb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
)

// Event is one execd stream event (CONTRACT §2.3).
type Event struct {
	Type           string          `json:"type"`
	Text           string          `json:"text,omitempty"`
	Timestamp      int64           `json:"timestamp,omitempty"`
	ExecutionCount int             `json:"execution_count,omitempty"`
	ExecutionTime  int64           `json:"execution_time,omitempty"`
	Results        json.RawMessage `json:"results,omitempty"`
	Error          *ExecError      `json:"error,omitempty"`
	// HasTimestamp is false when the frame carried no "timestamp" key (the
	// Python SDK silently drops such events, CONTRACT §7.1).
	HasTimestamp bool `json:"-"`
	// Raw is the frame's JSON.
	Raw json.RawMessage `json:"-"`
}

// ExecError is the error event payload; for commands EValue is the exit code.
type ExecError struct {
	EName     string   `json:"ename"`
	EValue    string   `json:"evalue"`
	Traceback []string `json:"traceback,omitempty"`
}

// maxFrame is the longest single SSE line accepted.
const maxFrame = 16 << 20

// ParseSSE reads an execd event stream and calls fn for each event. It accepts
// bare JSON frames and `data:`-prefixed ones, separated by blank lines or by
// single newlines; comment (`:`), `event:`, `id:` and `retry:` lines are
// ignored; a JSON object split over several `data:` lines is joined. A frame
// that is not JSON is passed to bad (if non-nil) and skipped. It returns the
// reader's error (nil at EOF) or fn's error.
func ParseSSE(r io.Reader, fn func(Event) error, bad func(frame string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxFrame)
	var pending strings.Builder
	flushBad := func() {
		if pending.Len() > 0 {
			if bad != nil {
				bad(pending.String())
			}
			pending.Reset()
		}
	}
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case strings.TrimSpace(line) == "":
			flushBad()
			continue
		case strings.HasPrefix(line, ":"),
			strings.HasPrefix(line, "event:"),
			strings.HasPrefix(line, "id:"),
			strings.HasPrefix(line, "retry:"):
			continue
		}
		if strings.HasPrefix(line, "data:") {
			line = strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
		if pending.Len() > 0 {
			// Continuation of a frame split over several lines?
			if ev, ok := decodeEvent(pending.String() + "\n" + line); ok {
				pending.Reset()
				if err := fn(ev); err != nil {
					return err
				}
				continue
			}
			// A complete frame on its own: what was pending is junk.
			if ev, ok := decodeEvent(line); ok {
				flushBad()
				if err := fn(ev); err != nil {
					return err
				}
				continue
			}
			pending.WriteByte('\n')
			pending.WriteString(line)
			if pending.Len() > maxFrame {
				flushBad()
			}
			continue
		}
		if ev, ok := decodeEvent(line); ok {
			if err := fn(ev); err != nil {
				return err
			}
			continue
		}
		pending.WriteString(line)
	}
	flushBad()
	return sc.Err()
}

func decodeEvent(s string) (Event, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") {
		return Event{}, false
	}
	var aux struct {
		Event
		TS *int64 `json:"timestamp"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	if err := dec.Decode(&aux); err != nil {
		return Event{}, false
	}
	if dec.More() { // trailing content: not one object
		return Event{}, false
	}
	ev := aux.Event
	if aux.TS != nil {
		ev.Timestamp, ev.HasTimestamp = *aux.TS, true
	}
	ev.Raw = json.RawMessage(s)
	return ev, true
}

// Execution is the result of a command, built from its events the way the
// SDKs do (CONTRACT §5.4).
type Execution struct {
	ID string
	// Stdout and Stderr hold one entry per stdout/stderr event: one line each,
	// terminator stripped; a blank line arrives as "\n".
	Stdout []string
	Stderr []string
	// ExitCode is int(error.evalue) if an error event arrived (and parses),
	// 0 if execution_complete arrived, else nil (background, or the stream
	// ended without a terminal event).
	ExitCode *int
	Error    *ExecError
	// Complete is set when execution_complete arrived.
	Complete *Complete
	Events   []Event
	// BadFrames are frames that were not JSON.
	BadFrames []string
	// StreamBytes is the size of the raw stream.
	StreamBytes int64
}

// Complete is the execution_complete payload.
type Complete struct {
	ExecutionTimeMs int64
}

// StdoutText joins Stdout back into text, one "\n" per line.
func (e *Execution) StdoutText() string { return joinLines(e.Stdout) }

// StderrText joins Stderr back into text.
func (e *Execution) StderrText() string { return joinLines(e.Stderr) }

func joinLines(ls []string) string {
	var b strings.Builder
	for _, l := range ls {
		if l == "\n" {
			b.WriteString("\n")
			continue
		}
		b.WriteString(l)
		if !strings.HasSuffix(l, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Apply folds one event into the execution.
func (e *Execution) Apply(ev Event) {
	e.Events = append(e.Events, ev)
	switch ev.Type {
	case "init":
		e.ID = ev.Text
	case "stdout":
		e.Stdout = append(e.Stdout, ev.Text)
	case "stderr":
		e.Stderr = append(e.Stderr, ev.Text)
	case "error":
		e.Error = ev.Error
		if ev.Error != nil {
			if n, err := strconv.Atoi(strings.TrimSpace(ev.Error.EValue)); err == nil {
				e.ExitCode = &n
			}
		}
	case "execution_complete":
		e.Complete = &Complete{ExecutionTimeMs: ev.ExecutionTime}
		if e.Error == nil {
			zero := 0
			e.ExitCode = &zero
		}
	}
}

// ParseExecution parses a whole stream into an Execution.
func ParseExecution(r io.Reader) (*Execution, error) {
	ex := &Execution{}
	cr := &countingReader{r: r}
	err := ParseSSE(cr, func(ev Event) error { ex.Apply(ev); return nil },
		func(f string) { ex.BadFrames = append(ex.BadFrames, f) })
	ex.StreamBytes = cr.n
	return ex, err
}

// headTail is a writer that keeps the first limit bytes (for Meta.Body of a
// stream) and counts the rest.
type headTail struct {
	limit int64
	buf   bytes.Buffer
	n     int64
}

func (h *headTail) Write(p []byte) (int, error) {
	h.n += int64(len(p))
	if room := h.limit - int64(h.buf.Len()); room > 0 {
		if int64(len(p)) > room {
			h.buf.Write(p[:room])
		} else {
			h.buf.Write(p)
		}
	}
	return len(p), nil
}
