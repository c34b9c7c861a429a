package agent

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"
)

// ContainerLogLimit bounds a sandbox's container log (agent.log): what the
// agent and the entrypoint write past it is dropped, with one line saying so.
// Docker's json-file driver keeps it all by default; the bundled server runs
// untrusted entrypoints beside the grader, whose disk they must not fill.
const ContainerLogLimit = 8 << 20

// maxLogLine is where a line with no newline is cut into log lines, as
// Docker's log driver cuts at 16 KiB.
const maxLogLine = 16 << 10

// containerLog is a sandbox's container log, kept as Docker keeps one: each
// line the agent or the entrypoint writes, prefixed with the time it was
// written in `docker logs --timestamps` form (RFC 3339, nanoseconds, UTC).
// Each stream assembles its own lines, so stdout and stderr interleave by
// line, never inside one.
type containerLog struct {
	mu      sync.Mutex
	w       io.Writer
	written int64
	limit   int64
	full    bool
	now     func() time.Time
}

func newContainerLog(w io.Writer, limit int64) *containerLog {
	return &containerLog{w: w, limit: limit, now: time.Now}
}

// stamp is the timestamp Docker prefixes a line with.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

func (l *containerLog) line(b []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.full {
		return
	}
	rec := stamp(l.now()) + " " + string(b) + "\n"
	if l.written+int64(len(rec)) > l.limit {
		l.full = true
		rec = fmt.Sprintf("%s [container log truncated: over %d bytes; later output is dropped]\n", stamp(l.now()), l.limit)
	}
	n, _ := io.WriteString(l.w, rec)
	l.written += int64(n)
}

// Stream is one writer of the log (the agent's log, the entrypoint's stdout
// or stderr). Close flushes a last line that has no newline.
func (l *containerLog) Stream() *logStream { return &logStream{log: l} }

type logStream struct {
	mu   sync.Mutex
	log  *containerLog
	part []byte
}

func (s *logStream) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.part = append(s.part, p...)
			for len(s.part) >= maxLogLine {
				s.log.line(s.part[:maxLogLine])
				s.part = append(s.part[:0], s.part[maxLogLine:]...)
			}
			break
		}
		s.part = append(s.part, p[:i]...)
		s.log.line(s.part)
		s.part = s.part[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (s *logStream) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.part) > 0 {
		s.log.line(s.part)
		s.part = nil
	}
	return nil
}
