package command

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Saw is what the target saw of one command's key.
type Saw struct {
	// Calls: every lifecycle call made with the key (refused creates too),
	// in the order the target recorded them.
	Calls []wire.Event
	// Created: the sandboxes a create with the key made (202), in order,
	// with each one's create request.
	Created    []string
	CreateBody map[string]json.RawMessage
	// Events: every event of those sandboxes (on a real target: the
	// lifecycle calls only, as the recording proxy saw them).
	Events []wire.Event
	// Keyless: lifecycle calls without a key while the command ran. With a
	// box, only those its guard saw it send (Record.Keyless); without one,
	// every keyless call of the window.
	Keyless []wire.Event
}

// Witness says what the target saw of a command's key, and of its progress
// while it runs.
type Witness interface {
	// Saw reads what the target saw of r's key (once r has ended).
	Saw(ctx context.Context, r *Record) (Saw, error)
	// Progress is r's progress source while it runs (WhenProgressed).
	Progress(r *Record) ProgressSource
	// Cursor marks "now" before r starts (keyless calls after it are r's
	// candidates); 0 when the witness needs none.
	Cursor(ctx context.Context) int64
	// Kind names the witness in evidence ("audit", "recording proxy").
	Kind() string
}

// AuditWitness reads the bundled server's audit through its admin API.
type AuditWitness struct{ Client *osb.Client }

// Kind implements Witness.
func (AuditWitness) Kind() string { return "audit" }

// Query asks the audit for the events q selects, bounded by limit.
func (a AuditWitness) Query(ctx context.Context, q osb.AuditQuery, limit time.Duration) (*osb.AuditLog, error) {
	c, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	res, err := a.Client.Admin().Audit(c, q)
	if err != nil {
		return nil, err
	}
	if !res.Decoded {
		return nil, fmt.Errorf("/_mock/audit answered %d: %s", res.Status, clip(string(res.Body), 200))
	}
	return &res.Value, nil
}

// KeyShare reads one key's share from the bundled server: the server
// filters by key (its calls and its sandboxes' events), so the answer grows
// with what that key did, not with everything graded on the server so far.
// The events are split again here, so a server that ignored the filter
// would give the same share.
func (a AuditWitness) KeyShare(ctx context.Context, keyFP string) (Saw, error) {
	if keyFP == "" {
		return ShareOf(nil, ""), nil
	}
	log, err := a.Query(ctx, osb.AuditQuery{Key: keyFP}, 30*time.Second)
	if err != nil {
		return Saw{}, err
	}
	return ShareOf(log.Events, keyFP), nil
}

// Cursor is the server's newest audit Seq: what is recorded from now on
// has a greater one. 0 (everything) when the server does not say.
func (a AuditWitness) Cursor(ctx context.Context) int64 {
	c, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := a.Client.Admin().Info(c)
	if err != nil || !res.Decoded {
		return 0
	}
	return res.Value.AuditSeq
}

// Saw implements Witness: the key's share, and the keyless calls recorded
// after r's cursor within its run (those its box's guard saw it send, when
// it ran in a box).
func (a AuditWitness) Saw(ctx context.Context, r *Record) (Saw, error) {
	sh, err := a.KeyShare(ctx, r.KeyFP)
	if err != nil {
		return Saw{}, err
	}
	if r.WantKeyless {
		log, err := a.Query(ctx, osb.AuditQuery{Kind: "lifecycle", Since: r.AuditSince}, 30*time.Second)
		if err != nil {
			return Saw{}, err
		}
		sh.Keyless = r.keylessOf(log.Events)
	}
	return sh, nil
}

// Progress implements Witness: the key's calls and its sandboxes' events
// recorded since the last poll.
func (a AuditWitness) Progress(r *Record) ProgressSource {
	return &auditProgress{w: a, keyFP: r.KeyFP}
}

// ProxyWitness reads the recording proxy a command talked through (a real
// target, which keeps no audit the grader can read).
type ProxyWitness struct{}

// Kind implements Witness.
func (ProxyWitness) Kind() string { return "recording proxy" }

// Cursor implements Witness (the proxy is the command's own: none needed).
func (ProxyWitness) Cursor(context.Context) int64 { return 0 }

// Saw implements Witness: the proxy's calls as lifecycle audit events.
func (ProxyWitness) Saw(_ context.Context, r *Record) (Saw, error) {
	// The proxy is the command's alone: every call it saw is the
	// command's, with its key or without one (then also in Keyless).
	events := EventsOf(r.Observed)
	sh := Saw{Calls: events, Events: events, CreateBody: map[string]json.RawMessage{}}
	for _, c := range r.Observed {
		if c.Method == "POST" && IsCreatePath(c.Path) && c.Status == 202 && c.SandboxID != "" {
			sh.Created = append(sh.Created, c.SandboxID)
			sh.CreateBody[c.SandboxID] = c.Body
		}
	}
	if r.WantKeyless {
		sh.Keyless = r.keylessOf(events)
	}
	return sh, nil
}

// Progress implements Witness: what the proxy recorded so far.
func (ProxyWitness) Progress(r *Record) ProgressSource {
	return proxyProgress{calls: r.ObservedCalls}
}

// InjectedByProxy names the fault of a lifecycle event the recording proxy
// answered itself (observe.Call.Injected; its Detail says what and why).
const InjectedByProxy = "injected-by-recording-proxy"

// EventsOf turns the recording proxy's lifecycle calls into audit events. A
// call the proxy answered itself (drill D3's 429) carries a Fault, as an
// injected answer does in the bundled server's audit: the harness's, never
// the target's.
func EventsOf(calls []observe.Call) []wire.Event {
	var out []wire.Event
	for _, c := range calls {
		ev := wire.Event{Time: c.Time, SandboxID: c.SandboxID, Kind: "lifecycle", Lifecycle: &wire.Lifecycle{
			Method: c.Method, Path: c.Path, Status: c.Status, KeyFingerprint: c.KeyFingerprint, Body: c.Body}}
		if c.Injected != "" {
			ev.Fault = &wire.Fault{Name: InjectedByProxy, Active: true, Detail: c.Injected}
		}
		out = append(out, ev)
	}
	return out
}

// ShareOf picks one key's share out of audit events (any superset of it, in
// Seq order). An empty fingerprint owns nothing: a call without a key cannot
// be attributed by key.
func ShareOf(events []wire.Event, keyFP string) Saw {
	sh := Saw{CreateBody: map[string]json.RawMessage{}}
	if keyFP == "" {
		return sh
	}
	mine := map[string]bool{}
	for _, ev := range events {
		lc := ev.Lifecycle
		if ev.Kind != "lifecycle" || lc == nil || lc.KeyFingerprint != keyFP {
			continue
		}
		sh.Calls = append(sh.Calls, ev)
		if lc.Method == "POST" && IsCreatePath(lc.Path) && lc.Status == 202 && ev.SandboxID != "" && !mine[ev.SandboxID] {
			mine[ev.SandboxID] = true
			sh.Created = append(sh.Created, ev.SandboxID)
			sh.CreateBody[ev.SandboxID] = lc.Body
		}
	}
	for _, ev := range events {
		if ev.SandboxID != "" && mine[ev.SandboxID] {
			sh.Events = append(sh.Events, ev)
		}
	}
	return sh
}

// IsCreatePath says whether p is the lifecycle create route.
func IsCreatePath(p string) bool {
	p = strings.TrimSuffix(strings.SplitN(p, "?", 2)[0], "/")
	return p == "/v1/sandboxes" || p == "/sandboxes"
}

// IsSandboxPath says whether p is the lifecycle path of sandbox id itself.
func IsSandboxPath(p, id string) bool {
	p = strings.TrimSuffix(strings.SplitN(p, "?", 2)[0], "/")
	return p == "/v1/sandboxes/"+id || p == "/sandboxes/"+id
}

// KeyFingerprint is how the bundled server's audit names an API key
// (wire.Fingerprint: the first 12 hex digits of its sha256, never the key).
func KeyFingerprint(key string) string {
	if key == "" {
		return ""
	}
	return wire.Fingerprint(key)
}

// clip shortens s to n bytes for a message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Recorded is a Witness over what was already read (a replay of evidence,
// or a test): its Saw is the same for every record, and it shows no
// progress.
type Recorded struct{ What Saw }

// Kind implements Witness.
func (Recorded) Kind() string { return "recorded" }

// Cursor implements Witness.
func (Recorded) Cursor(context.Context) int64 { return 0 }

// Saw implements Witness.
func (w Recorded) Saw(context.Context, *Record) (Saw, error) { return w.What, nil }

// Progress implements Witness.
func (Recorded) Progress(*Record) ProgressSource {
	return ProxyProgress(func() []observe.Call { return nil })
}
