package injection

import (
	"context"
	"errors"
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

// Watch follows the sidecar log of each sandbox rec's command creates,
// until ctx ends (the command ended; OnCreate).
func (s *Sidecars) Watch(ctx context.Context, rec *command.Record) {
	if s == nil || s.follow == nil {
		return
	}
	OnCreate(ctx, rec, func(id string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.logs[id] == nil {
			// Follow detaches from ctx itself: the log is followed until the
			// sidecar stops, past the command's end.
			s.logs[id] = indexdeny.Follow(ctx, s.follow, id)
			s.order = append(s.order, id)
		}
	})
}

// OnCreate polls rec's recording proxy for answered creates until ctx ends
// (the command ended), calling fn once with each new sandbox as soon as its
// create is seen answered; a last look is made after ctx ends.
func OnCreate(ctx context.Context, rec *command.Record, fn func(sandboxID string)) {
	seen := 0
	done := map[string]bool{}
	scan := func() {
		if rec.Proxy == nil {
			return
		}
		calls := rec.Proxy.Recorded() // append-only: only the new ones are looked at
		for _, c := range calls[min(seen, len(calls)):] {
			if c.Method == http.MethodPost && c.Status == http.StatusAccepted && c.SandboxID != "" && command.IsCreatePath(c.Path) && !done[c.SandboxID] {
				done[c.SandboxID] = true
				fn(c.SandboxID)
			}
		}
		seen = len(calls)
	}
	for {
		scan()
		select {
		case <-ctx.Done():
			scan()
			return
		case <-time.After(100 * time.Millisecond):
		}
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

// Workspaces holds a host-side watch of one directory of each sandbox a
// command creates (core.Target.WatchCreates), armed as soon as its create is
// seen answered.
type Workspaces struct {
	watch func(ctx context.Context, sandboxID, dir string) (FileWatch, error)
	dir   string
	mu    sync.Mutex
	byID  map[string]FileWatch
	errs  map[string]error
}

// NewWorkspaces watches dir of each sandbox with watch (nil: the target
// cannot; every sandbox then has none).
func NewWorkspaces(watch func(ctx context.Context, sandboxID, dir string) (FileWatch, error), dir string) *Workspaces {
	return &Workspaces{watch: watch, dir: dir, byID: map[string]FileWatch{}, errs: map[string]error{}}
}

// Watch arms the watch of each sandbox rec's command creates, until ctx
// ends; each watch lasts until its sandbox is removed.
func (w *Workspaces) Watch(ctx context.Context, rec *command.Record) {
	if w == nil || w.watch == nil {
		return
	}
	OnCreate(ctx, rec, func(id string) {
		fw, err := w.watch(context.WithoutCancel(ctx), id, w.dir)
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			w.errs[id] = err
			return
		}
		w.byID[id] = fw
	})
}

// Of is sandbox id's watch, or why it has none.
func (w *Workspaces) Of(id string) (FileWatch, error) {
	if w == nil || w.watch == nil {
		return nil, errors.New("the target cannot watch a sandbox's files")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if fw := w.byID[id]; fw != nil {
		return fw, nil
	}
	if err := w.errs[id]; err != nil {
		return nil, err
	}
	return nil, errors.New("its create was not seen answered while the run ran")
}

// FileWatch is a watch of what a sandbox writes into one directory
// (core.Target.WatchCreates).
type FileWatch interface {
	// Started is when the watch began; DirArmed when the directory's own
	// watch was added (zero: the directory has not appeared yet; a name
	// created and removed before then is not seen).
	Started() time.Time
	DirArmed() time.Time
	// Created are the names seen: Present ones were there when the
	// directory's watch was added.
	Created() ([]FileCreated, error)
}

// FileCreated is a name a FileWatch saw in its directory.
type FileCreated struct {
	Path    string
	At      time.Time
	Present bool
}
