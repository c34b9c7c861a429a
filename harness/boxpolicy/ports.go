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
// A connection is judged only by a look-up that began after it arrived: one
// already running may have read the key's sandboxes before the command's
// newest create was recorded. A port is refused as not the command's only
// when such a look-up read everything and did not find it; when it failed
// or did not finish, unsure says why, and the box records the connection
// as the grader's break (a harness error), never as the command's refusal.
type sandboxPorts struct {
	rec *command.Record
	ctx context.Context

	mu        sync.Mutex
	ports     map[int]bool
	seen      map[string]bool // sandboxes whose endpoints were read
	lastAt    time.Time
	inflight  chan struct{} // closed when the running look-up is done
	startedAt time.Time     // when the running look-up began
	lastErr   string        // why the last look-up did not read everything ("" it did)
	// created, endpoint: the reads a look-up makes (tests stub them).
	created  func(ctx context.Context) ([]string, error)
	endpoint func(ctx context.Context, id string, port int) (string, error)
	// waiting, when set, is told that a connection waits on a look-up
	// (fresh: one that began after it arrived); tests only.
	waiting func(fresh bool)
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

func (s *sandboxPorts) allowed(port int) bool {
	asked := time.Now()
	t := time.NewTimer(portLookupWait)
	defer t.Stop()
	for {
		s.mu.Lock()
		if s.ports[port] {
			s.mu.Unlock()
			return true
		}
		ch, fresh := s.inflight, !s.startedAt.Before(asked)
		if ch == nil {
			ch, fresh = make(chan struct{}), true
			s.inflight, s.startedAt = ch, time.Now()
			// At most ten look-ups a second: a command scanning ports waits on
			// itself; a fresh sandbox of its own is still found.
			wait := 100*time.Millisecond - time.Since(s.lastAt)
			go s.lookUp(ch, wait)
		}
		hook := s.waiting
		s.mu.Unlock()
		if hook != nil {
			hook(fresh)
		}
		select {
		case <-ch:
		case <-t.C:
			return false // unsure: the look-up did not finish
		}
		if fresh {
			s.mu.Lock()
			defer s.mu.Unlock()
			return s.ports[port]
		}
		// That look-up began before this connection: ask again.
	}
}

// unsure is why a port allowed refused may still be the command's: the
// last look-up failed, or one is still running (the connection stopped
// waiting for it); "" when the refusal is sure.
func (s *sandboxPorts) unsure(port int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.ports[port]:
		return ""
	case s.inflight != nil:
		return fmt.Sprintf("the look-up of the command's sandboxes' ports did not finish within %s", portLookupWait)
	case s.lastErr != "":
		return "the look-up of the command's sandboxes' ports failed: " + s.lastErr
	}
	return ""
}

// lookUp reads the endpoints of the key's sandboxes not read yet, with no
// lock held while it reads, and closes done.
func (s *sandboxPorts) lookUp(done chan struct{}, wait time.Duration) {
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
		s.lastErr = ""
		if failed != nil {
			s.lastErr = failed.Error()
		}
		s.lastAt = time.Now()
		s.inflight = nil
		s.mu.Unlock()
		close(done)
	}()
	if wait > 0 {
		time.Sleep(wait)
	}
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
