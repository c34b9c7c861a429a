package steps

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/osb"
)

// Drills D2 and D5 strike "mid-run": once the subject has made progress in
// its sandbox, i.e. after its first successful execd or file call on a
// sandbox its own key created (an upload, a finished command, a download).
// Never on a clock: a fixed delay after the create lands before the first
// command on a slow target and after the last one on a fast one.
//
// What the subject did is read from one observation source per target: the
// bundled server's audit (polled by the run's key with the cursor API), or
// on a real target the recording proxy (harness/observe), which sees execd
// and file calls only where it routes the sandbox endpoints. Where nothing
// sees them, the fault never fires and the drill is not measured, saying so
// (progressUnobserved).

// progressPoll is how often the observations are read.
const progressPoll = 150 * time.Millisecond

// progressCall is one observed call of the run.
type progressCall struct {
	Time      time.Time
	SandboxID string
	Created   bool   // a create with the run's key made this sandbox
	Progress  bool   // a successful execd or file call on this sandbox (not a readiness ping)
	What      string // e.g. "POST /command → 200", for notes
}

// progressSource gives the run's calls observed so far. A poll may return
// calls it returned before (the trigger is idempotent).
type progressSource interface {
	poll(ctx context.Context) ([]progressCall, error)
}

// whenProgressed polls src until a sandbox the run created has seen a
// successful execd or file call, then calls act with that sandbox (once).
// It returns without acting when ctx ends (the run is over).
func whenProgressed(ctx context.Context, src progressSource, every time.Duration, act func(sandboxID, what string)) {
	mine := map[string]bool{}
	progressed := map[string]string{} // sandbox → its first progress call
	var order []string                // sandboxes with progress, in the order seen (the create may be seen later)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		calls, err := src.poll(ctx)
		if err != nil {
			continue
		}
		for _, c := range calls {
			if c.SandboxID == "" {
				continue
			}
			if c.Created {
				mine[c.SandboxID] = true
			}
			if _, seen := progressed[c.SandboxID]; c.Progress && !seen {
				progressed[c.SandboxID] = c.What
				order = append(order, c.SandboxID)
			}
		}
		for _, id := range order {
			if mine[id] {
				act(id, progressed[id])
				return
			}
		}
	}
}

// whenProgressed is whenProgressed on the run's own observation source.
// The call that timed it is kept in r.faultCause.
func (e *Env) whenProgressed(ctx context.Context, r *subjectRun, act func(sandboxID string)) {
	whenProgressed(ctx, e.progressSource(r), progressPoll, func(id, what string) {
		r.faultCause = what
		act(id)
	})
}

func (e *Env) progressSource(r *subjectRun) progressSource {
	if e.mock() {
		return &auditProgress{e: e, keyFP: r.keyFP}
	}
	return proxyProgress{calls: func() []observe.Call { return observedCalls(r) }}
}

// observedCalls is everything the run's recording proxy saw: its lifecycle
// calls and, where it records them, its endpoint (execd) calls, each once.
// While the run goes on it reads what the proxy recorded so far, without
// waiting for calls in flight: Calls and EndpointCalls wait (up to 10 s)
// until none is, and a subject always has one while a command streams, so
// the drills' progress watcher read the upload only once the next command
// had ended, and D5's kill came after the subject had already removed its
// sandbox (TestDockerCalibration).
func observedCalls(r *subjectRun) []observe.Call {
	var calls []observe.Call
	calls = append(calls, r.observed...)      // kept once the run ended (launch.go)
	calls = append(calls, r.endpointCalls...) // likewise
	if r.rec != nil {
		calls = append(calls, r.rec.CallsSoFar()...) // while it runs
	}
	return dedupCalls(calls)
}

// dedupCalls drops repeated records of one exchange (a call may be found
// both among the run's observed calls and the proxy's endpoint calls).
func dedupCalls(calls []observe.Call) []observe.Call {
	type key struct {
		t                     time.Time
		method, path, sandbox string
		status                int
	}
	seen := map[key]bool{}
	out := calls[:0:0]
	for _, c := range calls {
		k := key{c.Time, c.Method, c.Path, c.SandboxID, c.Status}
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

// auditProgress reads the bundled server's audit: the run key's lifecycle
// calls and its sandboxes' events, only those recorded since the last poll.
type auditProgress struct {
	e     *Env
	keyFP string
	since int64
}

func (a *auditProgress) poll(ctx context.Context) ([]progressCall, error) {
	log, err := a.e.auditQuery(ctx, osb.AuditQuery{Key: a.keyFP, Since: a.since}, 10*time.Second)
	if err != nil {
		return nil, err
	}
	if log.LastSeq > a.since {
		a.since = log.LastSeq
	}
	return auditCalls(log.Events, a.keyFP), nil
}

// auditCalls turns audit events into observations: creates by the key, and
// finished commands and successful file operations as progress.
func auditCalls(events []osb.AuditEvent, keyFP string) []progressCall {
	var out []progressCall
	for _, id := range shareOf(events, keyFP).created {
		out = append(out, progressCall{SandboxID: id, Created: true, What: "create"})
	}
	for _, ev := range events {
		switch {
		case ev.Kind == "command" && ev.Command != nil && ev.Command.ExitCode != nil:
			out = append(out, progressCall{Time: ev.Time, SandboxID: ev.SandboxID, Progress: true,
				What: fmt.Sprintf("command finished (exit %d)", *ev.Command.ExitCode)})
		case ev.Kind == "file" && ev.File != nil && ev.File.Status >= 200 && ev.File.Status < 300:
			out = append(out, progressCall{Time: ev.Time, SandboxID: ev.SandboxID, Progress: true,
				What: fmt.Sprintf("file %s %s → %d", ev.File.Op, ev.File.Path, ev.File.Status)})
		}
	}
	return out
}

// proxyProgress reads the recording proxy of a real target.
type proxyProgress struct {
	calls func() []observe.Call
}

func (p proxyProgress) poll(context.Context) ([]progressCall, error) {
	var out []progressCall
	for _, c := range p.calls() {
		out = append(out, observedCall(c))
	}
	return out, nil
}

// observedCall classifies one call the recording proxy saw: a lifecycle
// create, or an execd call (recorded with its sandbox's id, on the execd
// path itself or through /sandboxes/{id}/proxy/44772/…).
func observedCall(c observe.Call) progressCall {
	pc := progressCall{Time: c.Time, SandboxID: c.SandboxID, What: fmt.Sprintf("%s %s → %d", c.Method, c.Path, c.Status)}
	if c.Method == http.MethodPost && isCreatePath(c.Path) && c.Status == http.StatusAccepted {
		pc.Created = true
		return pc
	}
	if _, ok := execdPath(c.Path); ok && c.Status >= 200 && c.Status < 300 && c.SandboxID != "" {
		pc.Progress = !isReadinessPath(c.Path)
	}
	return pc
}

// execdPort is the port of execd in a sandbox (CONTRACT §1.10).
const execdPort = "44772"

// execdPath reports whether a path the proxy recorded is a call to execd,
// and returns the execd path: a lifecycle route is not; a route through the
// server proxy to port 44772 is; any other path recorded with a sandbox id
// is execd's own (the proxy forwarding a sandbox endpoint).
func execdPath(p string) (string, bool) {
	p = strings.SplitN(p, "?", 2)[0]
	q := strings.TrimPrefix(p, "/v1")
	if q == "/sandboxes" || strings.HasPrefix(q, "/sandboxes/") {
		parts := strings.Split(strings.Trim(q, "/"), "/")
		if len(parts) >= 4 && parts[2] == "proxy" && parts[3] == execdPort {
			return "/" + strings.Join(parts[4:], "/"), true
		}
		return "", false
	}
	switch first := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2)[0]; first {
	case "command", "files", "directories", "code", "session", "ping", "metrics":
		return p, true
	}
	return "", false
}

// isReadinessPath: a ping or a metrics read is no progress in the analysis.
func isReadinessPath(p string) bool {
	ep, _ := execdPath(p)
	first := strings.SplitN(strings.TrimPrefix(ep, "/"), "/", 2)[0]
	return first == "ping" || first == "metrics" || first == ""
}

// progressUnobserved says why a drill's fault never fired on a real target
// when the recording proxy saw no execd or file call of the run at all: the
// subject's progress could not be seen there, so "mid-run" could not be
// found. "" when such calls were seen (the subject simply ended first) or on
// the bundled server, whose audit sees every call.
func (e *Env) progressUnobserved(r *subjectRun) string {
	if e.mock() {
		return ""
	}
	for _, c := range observedCalls(r) {
		if _, ok := execdPath(c.Path); ok && c.SandboxID != "" {
			return ""
		}
	}
	return fmt.Sprintf("on target %s the recording proxy saw none of the subject's execd or file calls (it sees them only where it routes the sandbox endpoints), "+
		"so its progress in the sandbox could not be observed and the fault could not be timed mid-run; it was not injected", e.opt.Target.Kind)
}

// execdCallsAfter counts the calls to sandbox id's execd that the recording
// proxy saw at or after t (D2's count on a real target), with a description
// of each.
func execdCallsAfter(calls []observe.Call, id string, t time.Time) (int, []string) {
	n := 0
	var seen []string
	for _, c := range calls {
		if c.SandboxID != id || c.Time.Before(t) {
			continue
		}
		if _, ok := execdPath(c.Path); ok {
			n++
			seen = append(seen, fmt.Sprintf("execd %s %s → %d", c.Method, c.Path, c.Status))
		}
	}
	return n, seen
}
