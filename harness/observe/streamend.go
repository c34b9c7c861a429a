package observe

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// A command's end, read from the stream that carries it.
//
// execd answers POST /command with an SSE stream that ends in exactly one
// terminal event (CONTRACT §2.3): {"type":"execution_complete",…} when the
// command exited 0, {"type":"error","error":{"evalue":"<exit code>",…}}
// when it exited non-zero (-1: killed by a signal); a spawn failure's error
// carries the OS error instead of a number. Frames are a bare JSON object
// and "\n\n", or "data: {json}" (both accepted by the SDKs). streamEnd reads
// the stream as the proxy forwards it, a line at a time, never holding more
// than maxStreamLine of it, and keeps the first terminal event's exit code:
// nil when the stream ended without one (cut off, a spawn failure), which
// is a command not run to completion.
type streamEnd struct {
	line []byte
	over bool // the current line passed maxStreamLine: skipped to its end
	exit *int
	done bool // a terminal event was seen
}

// maxStreamLine bounds the part of one line streamEnd holds (an output line
// can be any length; a terminal event is short).
const maxStreamLine = 64 << 10

func (s *streamEnd) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 && !s.done {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.add(b)
			break
		}
		s.add(b[:i])
		if !s.over {
			s.event(s.line)
		}
		s.line, s.over = s.line[:0], false
		b = b[i+1:]
	}
	return n, nil
}

func (s *streamEnd) add(b []byte) {
	if s.over {
		return
	}
	if len(s.line)+len(b) > maxStreamLine {
		s.over = true
		s.line = s.line[:0]
		return
	}
	s.line = append(s.line, b...)
}

func (s *streamEnd) event(line []byte) {
	line = bytes.TrimSpace(line)
	line = bytes.TrimSpace(bytes.TrimPrefix(line, []byte("data:")))
	if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(`"type"`)) {
		return
	}
	var ev struct {
		Type  string `json:"type"`
		Error *struct {
			Evalue string `json:"evalue"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	switch ev.Type {
	case "execution_complete":
		zero := 0
		s.exit, s.done = &zero, true
	case "error":
		s.done = true
		if ev.Error != nil {
			if code, err := strconv.Atoi(ev.Error.Evalue); err == nil {
				s.exit = &code
			}
		}
	}
}

// backgroundIn says whether a POST /command body asked for a background
// command (its stream ends at once with execution_complete: not its end).
func backgroundIn(body []byte) bool {
	var req struct {
		Background bool `json:"background"`
	}
	return json.Unmarshal(body, &req) == nil && req.Background
}
