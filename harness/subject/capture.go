package subject

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// capture copies one output stream of the subject to a file, keeping at most
// limit bytes on disk and only a small buffer in memory. It keeps draining
// after the limit so the subject never blocks on a full pipe.
type capture struct {
	r         *os.File
	f         *os.File
	limit     int64
	total     int64
	truncated bool
	err       error
	done      chan struct{}
	closeOnce sync.Once
}

func newCapture(path string, limit int64) (c *capture, w *os.File, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	c = &capture{r: r, f: f, limit: limit, done: make(chan struct{})}
	go c.run()
	return c, w, nil
}

func (c *capture) run() {
	defer close(c.done)
	buf := make([]byte, 32*1024)
	for {
		n, err := c.r.Read(buf)
		if n > 0 {
			c.total += int64(n)
			keep := int64(n)
			written := c.total - int64(n)
			if room := c.limit - written; room < keep {
				keep = max(room, 0)
				c.truncated = true
			}
			if keep > 0 && c.err == nil {
				if _, werr := c.f.Write(buf[:keep]); werr != nil {
					c.err = werr
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) && c.err == nil {
				c.err = err
			}
			return
		}
	}
}

// finish waits for the writers to go away (or forces the read end closed
// after the caller's deadline channel fires) and closes the file.
func (c *capture) finish(force <-chan struct{}) {
	select {
	case <-c.done:
	case <-force:
		c.closeOnce.Do(func() { c.r.Close() })
		<-c.done
	}
	c.closeOnce.Do(func() { c.r.Close() })
	if err := c.f.Close(); err != nil && c.err == nil {
		c.err = err
	}
}

// logs are a command's stdout and stderr captures (Result's log files):
// open them, hand the writers to the command, drop ours once it started,
// then finish both and keep their counts in the Result.
type logs struct {
	out, err   *capture
	outW, errW *os.File
}

func openLogs(res *Result, limit int64) (*logs, error) {
	out, outW, err := newCapture(res.StdoutPath, limit)
	if err != nil {
		return nil, fmt.Errorf("subject: stdout: %w", err)
	}
	errCap, errW, err := newCapture(res.StderrPath, limit)
	if err != nil {
		outW.Close()
		out.finish(closedChan())
		return nil, fmt.Errorf("subject: stderr: %w", err)
	}
	return &logs{out: out, err: errCap, outW: outW, errW: errW}, nil
}

// started drops the harness's copies of the writers (the command holds its
// own, so EOF can arrive); a command that did not start ends the captures.
func (l *logs) started(startErr error) {
	l.outW.Close()
	l.errW.Close()
	if startErr != nil {
		l.out.finish(closedChan())
		l.err.finish(closedChan())
	}
}

// finish waits for both streams to end, at most until a process that left
// the group (and may still hold the pipes) has had two more seconds, and
// records the counts in res.
func (l *logs) finish(res *Result) {
	force := time.After(2 * time.Second)
	forceCh := make(chan struct{})
	go func() { <-force; close(forceCh) }()
	l.out.finish(forceCh)
	l.err.finish(forceCh)
	res.StdoutBytes, res.StdoutTruncated = l.out.total, l.out.truncated
	res.StderrBytes, res.StderrTruncated = l.err.total, l.err.truncated
}

// failed says why a log could not be written, if so.
func (l *logs) failed() error {
	if l.out.err != nil {
		return fmt.Errorf("subject: writing stdout log: %w", l.out.err)
	}
	if l.err.err != nil {
		return fmt.Errorf("subject: writing stderr log: %w", l.err.err)
	}
	return nil
}
