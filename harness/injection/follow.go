package injection

import (
	"context"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/indexdeny"
)

// Sidecars follows the egress sidecar log of every sandbox a command
// creates, as its recording proxy sees the creates answered: from its
// first line (the engine keeps it from the container's start) until the
// sidecar stops. A sandbox deleted before its log could be followed has
// none (Read says so).
type Sidecars struct {
	follow indexdeny.Follower
	mu     sync.Mutex
	logs   map[string]*indexdeny.SidecarLog
	order  []string
}

// NewSidecars follows with follow (nil: the target gives no sidecar log;
// Read then has nothing).
func NewSidecars(follow indexdeny.Follower) *Sidecars {
	return &Sidecars{follow: follow, logs: map[string]*indexdeny.SidecarLog{}}
}

// Watch polls rec's recording proxy for answered creates until ctx ends
// (the command ended), following each new sandbox's sidecar log; a last
// look is made after ctx ends.
func (s *Sidecars) Watch(ctx context.Context, rec *command.Record) {
	if s == nil || s.follow == nil {
		return
	}
	for {
		s.scan(ctx, rec)
		select {
		case <-ctx.Done():
			s.scan(ctx, rec)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (s *Sidecars) scan(ctx context.Context, rec *command.Record) {
	if rec.Proxy == nil {
		return
	}
	for _, c := range rec.Proxy.Recorded() {
		pc := command.ObservedCall(c)
		if !pc.Created || pc.SandboxID == "" {
			continue
		}
		s.mu.Lock()
		if s.logs[pc.SandboxID] == nil {
			// Follow detaches from ctx itself: the log is followed until the
			// sidecar stops, past the command's end.
			s.logs[pc.SandboxID] = indexdeny.Follow(ctx, s.follow, pc.SandboxID)
			s.order = append(s.order, pc.SandboxID)
		}
		s.mu.Unlock()
	}
}

// Read returns each followed log so far, in the order the sandboxes were
// created, waiting up to wait in all for the sidecars to stop.
func (s *Sidecars) Read(wait time.Duration) []Log {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	ids := append([]string(nil), s.order...)
	logs := make([]*indexdeny.SidecarLog, len(ids))
	for i, id := range ids {
		logs[i] = s.logs[id]
	}
	s.mu.Unlock()
	deadline := time.Now().Add(wait)
	out := make([]Log, 0, len(ids))
	for i, id := range ids {
		text, err, ok := logs[i].Read(max(time.Until(deadline), 0))
		if ok && text == "" && err != nil {
			ok = false // nothing was ever read: the follower never attached
		}
		out = append(out, Log{Sandbox: id, Text: text, Err: err, OK: ok})
	}
	return out
}
