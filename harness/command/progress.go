package command

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Progress: drills D2 and D5 strike "mid-run", once the subject has made
// progress in its sandbox, i.e. after its first successful execd or file
// call on a sandbox its own key created (an upload, a finished command, a
// download). Never on a clock: a fixed delay after the create lands before
// the first command on a slow target and after the last one on a fast one.
//
// What the command did is read from its Witness: the bundled server's audit
// (polled by the key with the cursor API), or on a real target the recording
// proxy, which sees execd and file calls only where it routes the sandbox
// endpoints. Where nothing sees them, the fault never fires
// (ProgressUnobserved says so).

// ProgressPoll is how often the observations are read.
const ProgressPoll = 150 * time.Millisecond

// ProgressCall is one observed call of the command.
type ProgressCall struct {
	Time      time.Time
	SandboxID string
	Created   bool   // a create with the command's key made this sandbox
	Progress  bool   // a successful execd or file call on this sandbox (not a readiness ping)
	What      string // e.g. "POST /command → 200", for notes
}

// ProgressSource gives the command's calls observed so far. A poll may
// return calls it returned before (the trigger is idempotent).
type ProgressSource interface {
	Poll(ctx context.Context) ([]ProgressCall, error)
}

// WhenProgressed polls src until a sandbox the command created has seen a
// successful execd or file call, then calls act with that sandbox and the
// call that showed it (once). It returns without acting when ctx ends.
func WhenProgressed(ctx context.Context, src ProgressSource, every time.Duration, act func(sandboxID, what string)) {
	mine := map[string]bool{}
	progressed := map[string]string{} // sandbox → its first progress call
	var order []string                // sandboxes with progress, in the order seen (the create may be seen later)
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		calls, err := src.Poll(ctx)
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

// auditProgress reads the bundled server's audit: the key's lifecycle calls
// and its sandboxes' events, only those recorded since the last poll.
type auditProgress struct {
	w     AuditWitness
	keyFP string
	since int64
}

func (a *auditProgress) Poll(ctx context.Context) ([]ProgressCall, error) {
	log, err := a.w.Query(ctx, osb.AuditQuery{Key: a.keyFP, Since: a.since}, 10*time.Second)
	if err != nil {
		return nil, err
	}
	if log.LastSeq > a.since {
		a.since = log.LastSeq
	}
	return AuditCalls(log.Events, a.keyFP), nil
}

// AuditCalls turns audit events into observations: creates by the key, and
// finished commands and successful file operations as progress.
func AuditCalls(events []wire.Event, keyFP string) []ProgressCall {
	var out []ProgressCall
	for _, id := range ShareOf(events, keyFP).Created {
		out = append(out, ProgressCall{SandboxID: id, Created: true, What: "create"})
	}
	for _, ev := range events {
		switch {
		case ev.Kind == "command" && ev.Command != nil && ev.Command.ExitCode != nil:
			out = append(out, ProgressCall{Time: ev.Time, SandboxID: ev.SandboxID, Progress: true,
				What: fmt.Sprintf("command finished (exit %d)", *ev.Command.ExitCode)})
		case ev.Kind == "file" && ev.File != nil && ev.File.Status >= 200 && ev.File.Status < 300:
			out = append(out, ProgressCall{Time: ev.Time, SandboxID: ev.SandboxID, Progress: true,
				What: fmt.Sprintf("file %s %s → %d", ev.File.Op, ev.File.Path, ev.File.Status)})
		}
	}
	return out
}

// proxyProgress reads the recording proxy of a real target.
type proxyProgress struct {
	calls func() []observe.Call
}

func (p proxyProgress) Poll(context.Context) ([]ProgressCall, error) {
	var out []ProgressCall
	for _, c := range p.calls() {
		out = append(out, ObservedCall(c))
	}
	return out, nil
}

// ProxyProgress is a progress source over a function giving the recording
// proxy's calls so far.
func ProxyProgress(calls func() []observe.Call) ProgressSource { return proxyProgress{calls: calls} }

// ObservedCall classifies one call the recording proxy saw: a lifecycle
// create, or an execd call (recorded with its sandbox's id, on the execd
// path itself or through /sandboxes/{id}/proxy/44772/…).
func ObservedCall(c observe.Call) ProgressCall {
	pc := ProgressCall{Time: c.Time, SandboxID: c.SandboxID, What: fmt.Sprintf("%s %s → %d", c.Method, c.Path, c.Status)}
	if c.Method == http.MethodPost && IsCreatePath(c.Path) && c.Status == http.StatusAccepted {
		pc.Created = true
		return pc
	}
	if _, ok := ExecdPath(c.Path); ok && c.Status >= 200 && c.Status < 300 && c.SandboxID != "" {
		pc.Progress = !isReadinessPath(c.Path)
	}
	return pc
}

// execdPort is the port of execd in a sandbox (CONTRACT §1.10).
const execdPort = "44772"

// ExecdPath reports whether a path the proxy recorded is a call to execd,
// and returns the execd path: a lifecycle route is not; a route through the
// server proxy to port 44772 is; any other path recorded with a sandbox id
// is execd's own (the proxy forwarding a sandbox endpoint).
func ExecdPath(p string) (string, bool) {
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
	ep, _ := ExecdPath(p)
	first := strings.SplitN(strings.TrimPrefix(ep, "/"), "/", 2)[0]
	return first == "ping" || first == "metrics" || first == ""
}

// ProgressUnobserved says why a drill's fault never fired on a real target
// when the recording proxy saw none of the command's execd or file calls:
// its progress could not be seen there, so "mid-run" could not be found.
// "" when such calls were seen (the command simply ended first) or when the
// witness is the bundled server's audit, which sees every call.
func (rec *Record) ProgressUnobserved(targetKind string) string {
	if _, isProxy := rec.Witness.(ProxyWitness); !isProxy {
		return ""
	}
	for _, c := range rec.ObservedCalls() {
		if _, ok := ExecdPath(c.Path); ok && c.SandboxID != "" {
			return ""
		}
	}
	return fmt.Sprintf("on target %s the recording proxy saw none of the subject's execd or file calls (it sees them only where it routes the sandbox endpoints), "+
		"so its progress in the sandbox could not be observed and the fault could not be timed mid-run; it was not injected", targetKind)
}

// ExecdCallsAfter counts the calls to sandbox id's execd that the recording
// proxy saw at or after t (D2's count on a real target), with a description
// of each.
func ExecdCallsAfter(calls []observe.Call, id string, t time.Time) (int, []string) {
	n := 0
	var seen []string
	for _, c := range calls {
		if c.SandboxID != id || c.Time.Before(t) {
			continue
		}
		if _, ok := ExecdPath(c.Path); ok {
			n++
			seen = append(seen, fmt.Sprintf("execd %s %s → %d", c.Method, c.Path, c.Status))
		}
	}
	return n, seen
}
