package boxpolicy

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
)

// sandboxPorts are the loopback ports of the endpoints of sandboxes a
// command's key created, looked up when a connection asks for a port not
// known yet.
//
// No lock is held across network I/O: one look-up runs at a time (in a
// goroutine of its own, every read bounded), and a connection waits for it
// at most portLookupWait. A look-up that never returned (an audit read the
// server never answered) once held a hostile calibration grade for ten
// minutes: every connection of the box waited on the lock, and the box's
// close waited on its connections.
//
// A connection is judged only by a look-up that began to read after it
// arrived (one waiting its turn under the rate bound counts): one already
// reading may have read the key's sandboxes before the command's newest
// create was recorded. A port is refused as not the command's only
// when such a look-up read everything and did not find it; when that
// look-up failed, or did not finish within the connection's wait, check
// says why (unsure), and the box records the connection as the grader's
// break (a harness error), never as the command's refusal (unless the
// command is scanning: harness/confine, ScanPorts).
//
// The verdict is that one look-up's, given with the answer (check), never
// read afterwards from the state of the box's look-ups: a command that
// floods the box with connections keeps a look-up running almost always,
// and a refusal judged by a look-up that read everything was once reported
// unsure because the next one, started by the flood, was still running
// (nine in ten of a scan's refusals became the grader's breaks, and the
// scanning command's failures harness errors).
type sandboxPorts struct {
	rec *command.Record
	ctx context.Context

	mu       sync.Mutex
	ports    map[int]bool
	seen     map[string]bool // sandboxes whose endpoints were read
	lastAt   time.Time
	inflight *lookUp // the running look-up (nil: none)
	// created, endpoint: the reads a look-up makes (tests stub them).
	created  func(ctx context.Context) ([]string, error)
	endpoint func(ctx context.Context, id string, port int) (string, error)
	// waiting, when set, is told that a connection waits on a look-up
	// (fresh: one that began after it arrived); tests only.
	waiting func(fresh bool)
}

// lookUp is one look-up of the key's sandboxes' ports.
type lookUp struct {
	began time.Time     // when it began to read (zero: not yet, it waits its turn)
	done  chan struct{} // closed when it is over; err is set by then
	err   string        // why it did not read everything ("" it did)
}

// The bounds of a look-up: the whole of it, and a connection's wait for it.
var (
	portLookupLimit = 20 * time.Second
	portLookupWait  = 25 * time.Second
)

func newSandboxPorts(ctx context.Context, client *osb.Client, rec *command.Record) *sandboxPorts {
	s := &sandboxPorts{rec: rec, ctx: ctx, ports: map[int]bool{}, seen: map[string]bool{}}
	s.created = func(ctx context.Context) ([]string, error) { return createdByKey(ctx, client, rec) }
	s.endpoint = func(ctx context.Context, id string, port int) (string, error) {
		res, err := client.GetEndpoint(ctx, id, port, false)
		switch {
		case err != nil:
			return "", err
		case res.Status == http.StatusNotFound:
			return "", nil // gone: nothing to reach
		case !res.Decoded:
			return "", fmt.Errorf("endpoint answered %d", res.Status) // not running yet: read again
		}
		return res.Value.Endpoint, nil
	}
	return s
}

// check says whether port is the command's: ok, or refused; unsure (not
// "") when the look-up that judged the connection failed or did not finish
// within portLookupWait, so the grader cannot tell.
func (s *sandboxPorts) check(port int) (ok bool, unsure string) {
	asked := time.Now()
	t := time.NewTimer(portLookupWait)
	defer t.Stop()
	for {
		s.mu.Lock()
		if s.ports[port] {
			s.mu.Unlock()
			return true, ""
		}
		l := s.inflight
		if l == nil {
			l = &lookUp{done: make(chan struct{})}
			s.inflight = l
			// At most ten look-ups a second: a command scanning ports waits on
			// itself; a fresh sandbox of its own is still found.
			wait := 100*time.Millisecond - time.Since(s.lastAt)
			go s.lookUp(l, wait)
		}
		// Fresh: it had not begun to read when this connection arrived.
		fresh := l.began.IsZero() || !l.began.Before(asked)
		hook := s.waiting
		s.mu.Unlock()
		if hook != nil {
			hook(fresh)
		}
		select {
		case <-l.done:
		case <-t.C:
			return false, fmt.Sprintf("the look-up of the command's sandboxes' ports did not finish within %s", portLookupWait)
		}
		s.mu.Lock()
		fresh = !l.began.Before(asked)
		s.mu.Unlock()
		if fresh {
			s.mu.Lock()
			defer s.mu.Unlock()
			switch {
			case s.ports[port]:
				return true, ""
			case l.err != "":
				return false, "the look-up of the command's sandboxes' ports failed: " + l.err
			}
			return false, "" // that look-up read everything: a sure refusal
		}
		// That look-up began before this connection: ask again.
	}
}

// lookUp reads the endpoints of the key's sandboxes not read yet, with no
// lock held while it reads, and closes l.done (l.err set first).
func (s *sandboxPorts) lookUp(l *lookUp, wait time.Duration) {
	found := map[int]bool{}
	read := map[string]bool{}
	var failed error
	defer func() {
		s.mu.Lock()
		for p := range found {
			s.ports[p] = true
		}
		for id := range read {
			s.seen[id] = true
		}
		if failed != nil {
			l.err = failed.Error()
		}
		s.lastAt = time.Now()
		s.inflight = nil
		s.mu.Unlock()
		close(l.done)
	}()
	if wait > 0 {
		time.Sleep(wait)
	}
	s.mu.Lock()
	l.began = time.Now() // a connection that arrived while it waited its turn is judged by it
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, portLookupLimit)
	defer cancel()
	ids, err := s.created(ctx)
	if err != nil {
		failed = fmt.Errorf("reading the sandboxes the command's key created: %w", err)
		return
	}
	s.mu.Lock()
	var fresh []string
	for _, id := range ids {
		if !s.seen[id] {
			fresh = append(fresh, id)
		}
	}
	s.mu.Unlock()
	for _, id := range fresh {
		ok := true
		for _, p := range []int{osb.DefaultExecdPort, osb.DefaultEgressPort} {
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			ep, err := s.endpoint(c, id, p)
			cancel()
			if err != nil {
				ok = false // read again at the next look-up
				if failed == nil {
					failed = fmt.Errorf("reading the endpoint of sandbox %s port %d: %w", id, p, err)
				}
				continue
			}
			if hp := LoopbackPort(ep); hp > 0 {
				found[hp] = true
			}
		}
		if ok {
			read[id] = true
		}
		if ctx.Err() != nil {
			if failed == nil {
				failed = ctx.Err()
			}
			return
		}
	}
}

// createdByKey are the sandboxes the command's key created so far: its
// recording proxy's (a real target) or the bundled server's audit.
func createdByKey(ctx context.Context, client *osb.Client, rec *command.Record) ([]string, error) {
	if rec.Proxy != nil {
		var ids []string
		for _, c := range rec.Proxy.Calls() {
			if c.Method == "POST" && command.IsCreatePath(c.Path) && c.Status == 202 && c.SandboxID != "" {
				ids = append(ids, c.SandboxID)
			}
		}
		return ids, nil
	}
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sh, err := command.AuditWitness{Client: client}.KeyShare(c, rec.KeyFP)
	if err != nil {
		return nil, err
	}
	return sh.Created, nil
}
