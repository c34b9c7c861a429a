package injection

import (
	"context"
	"net/http"
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
	seen := 0
	for {
		seen = s.scan(ctx, rec, seen)
		select {
		case <-ctx.Done():
			s.scan(ctx, rec, seen)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// scan follows the sandboxes created among the proxy's lifecycle records
// after the first seen (they are only ever appended), and returns how many
// it has looked at.
func (s *Sidecars) scan(ctx context.Context, rec *command.Record, seen int) int {
	if rec.Proxy == nil {
		return seen
	}
	calls := rec.Proxy.Recorded()
	for _, c := range calls[min(seen, len(calls)):] {
		if c.Method != http.MethodPost || c.Status != http.StatusAccepted || c.SandboxID == "" || !command.IsCreatePath(c.Path) {
			continue
		}
		s.mu.Lock()
		if s.logs[c.SandboxID] == nil {
			// Follow detaches from ctx itself: the log is followed until the
			// sidecar stops, past the command's end.
			s.logs[c.SandboxID] = indexdeny.Follow(ctx, s.follow, c.SandboxID)
			s.order = append(s.order, c.SandboxID)
		}
		s.mu.Unlock()
	}
	return len(calls)
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
