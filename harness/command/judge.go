package command

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Judge says why the command's outcome cannot be held against the
// submission, if so (nil: judge it by its result). It applies the rules of
// the package doc once, in their order: could not run, budget spent, timed
// out, and, for a command that exited non-zero, the grader broke one of its
// exchanges, the target 5xx'd one of its creates that no drill injected,
// one of its sandboxes vanished with no DELETE from anyone. The errors are
// a HarnessFault, or wrap ErrBudgetSpent or ErrSubjectTimedOut.
func (rec *Record) Judge(ctx context.Context) error {
	what := rec.What()
	switch {
	case rec.Err != nil: // the harness's or the target's, never the submission's
		return Harnessf("the harness could not run %s: %v", what, rec.Err)
	case rec.Res == nil:
		return Harnessf("%s did not run", what)
	case rec.BudgetSpent && rec.Field == "run":
		return fmt.Errorf("%w (%s) before this run; grade again with a larger --submission-timeout to measure it", ErrBudgetSpent, rec.Budget())
	case rec.BudgetSpent:
		return fmt.Errorf("%w (%s) before its %s command; grade again with a larger --submission-timeout to measure it", ErrBudgetSpent, rec.Budget(), rec.Field)
	case rec.Res.TimedOut && rec.Field == "run":
		return fmt.Errorf("%w (limit reached after %s)", ErrSubjectTimedOut, rec.Res.Duration.Round(time.Second))
	case rec.Res.TimedOut:
		return fmt.Errorf("%w: %s ran past %s", ErrSubjectTimedOut, what, rec.Res.Duration.Round(time.Second))
	case rec.Res.ExitCode == 0:
		return nil
	}
	exit := rec.Res.ExitCode
	if why := brokenByGraderBut(rec.Res, rec.DrillSandbox); why != "" {
		return Harnessf("%s, and %s then exited %d: a fault of the grader, not of the submission", why, what, exit)
	}
	if why := rec.TargetFailure(ctx); why != "" {
		if rec.Field == "run" {
			return Harnessf("the target failed the subject's create (%s), and the subject then exited %d: a fault of the target, not of the submission", why, exit)
		}
		return Harnessf("the target failed a create of %s (%s), and the command then exited %d: a fault of the target, not of the submission", what, why, exit)
	}
	if why := rec.UnexplainedVanish(ctx); why != "" {
		return Harnessf("%s; %s then exited %d: a fault of the target or the machine, not of the submission", why, what, exit)
	}
	return nil
}

// BrokenByGrader names the exchanges of a command that the grader's own
// confinement broke while the command waited for them (harness/confine
// Status.Broken: a connection's destination unreadable, the guard's upstream
// failing or its answer breaking off); "" when there were none.
func BrokenByGrader(res *subject.Result) string {
	if res == nil || res.Confinement == nil || res.Confinement.BrokenCount == 0 {
		return ""
	}
	first := res.Confinement.Broken[0]
	return fmt.Sprintf("the grader's confinement broke %d of its exchanges (first at %s: %s %s)",
		res.Confinement.BrokenCount, first.Time.Format("15:04:05.000"), first.Addr, first.Reason)
}

// upstreamCut is how the box's guard words an exchange whose answer the
// upstream (the target, or the recording proxy relaying it) broke off.
const upstreamCut = "the upstream's answer broke off under the guard"

// brokenByGraderBut is BrokenByGrader without the exchanges with the sandbox
// a drill removed on purpose (drill; "" none) whose answer the upstream
// broke off: a command stream of a sandbox the drill deleted ends when its
// container stops (on a real target the recording proxy relays that cut),
// which is the drill's doing, never the grader's. A break the box lists
// beyond its first confine.MaxRefusals cannot be told apart and still
// counts.
func brokenByGraderBut(res *subject.Result, drill string) string {
	if drill == "" || res == nil || res.Confinement == nil || res.Confinement.BrokenCount == 0 {
		return BrokenByGrader(res)
	}
	var kept []confine.Refusal
	for _, b := range res.Confinement.Broken {
		if strings.HasPrefix(b.Reason, upstreamCut) && namesSandbox(b.Addr, drill) {
			continue
		}
		kept = append(kept, b)
	}
	n := res.Confinement.BrokenCount - (len(res.Confinement.Broken) - len(kept))
	if n <= 0 {
		return ""
	}
	if len(kept) == 0 {
		return fmt.Sprintf("the grader's confinement broke %d of its exchanges (beyond the %d it lists, which are the drill's sandbox's)", n, len(res.Confinement.Broken))
	}
	return fmt.Sprintf("the grader's confinement broke %d of its exchanges (first at %s: %s %s)",
		n, kept[0].Time.Format("15:04:05.000"), kept[0].Addr, kept[0].Reason)
}

// namesSandbox says whether a guard's "host:port METHOD path" is a call on
// sandbox id (its lifecycle path, or the server's proxy route to it).
func namesSandbox(addr, id string) bool {
	_, rest, _ := strings.Cut(addr, " /")
	path, _, _ := strings.Cut("/"+rest, "?")
	for _, pre := range []string{"/v1/sandboxes/", "/sandboxes/"} {
		if tail, ok := strings.CutPrefix(path, pre); ok {
			seg, _, _ := strings.Cut(tail, "/")
			return seg == id
		}
	}
	return false
}

// TargetFailure names a create of the command that the target answered
// with a server error no drill injected (a 5xx is never an answer to a
// client's mistake; e.g. 500 DOCKER::SANDBOX_START_FAILED when a real
// target's egress sidecar did not become ready in time); "" when there was
// none, or when the witness cannot be read (the check that needs it says so).
// An answer the recording proxy injected itself (observe.Call.Injected) is
// the harness's, never the target's.
func (rec *Record) TargetFailure(ctx context.Context) string {
	for _, c := range rec.Observed {
		if c.Injected == "" && c.Method == http.MethodPost && IsCreatePath(c.Path) && c.Status >= 500 {
			return fmt.Sprintf("%s %s → %d %s", c.Method, c.Path, c.Status, clip(c.Answer, 200))
		}
	}
	if rec.Witness == nil {
		return ""
	}
	saw, err := rec.Saw(ctx)
	if err != nil {
		return ""
	}
	return CreateFailedByServer(saw.Calls)
}

// CreateFailedByServer names the first create among calls that the server
// answered with a 5xx no drill injected ("" if none).
func CreateFailedByServer(calls []wire.Event) string {
	for _, ev := range calls {
		lc := ev.Lifecycle
		if lc != nil && ev.Fault == nil && lc.Method == http.MethodPost && IsCreatePath(lc.Path) && lc.Status >= 500 {
			return fmt.Sprintf("POST %s → %d", lc.Path, lc.Status)
		}
	}
	return ""
}

// A sandbox that stops or disappears with no DELETE from anyone.
//
// On a real target the grader sees the command's lifecycle calls through the
// recording proxy, the drills' own deletes, and (the docker target) the
// control plane's log and the engine. A sandbox of the command (not the
// drill's) that the engine says stopped before its TTL (its container is not
// running, or it is gone and the engine's events say it died) with no DELETE
// from anyone before then (none sent by its key before it stopped, no DELETE
// of it in the control plane's log but the key's own after it stopped) was
// stopped by the machine: killed by a signal, OOM-killed, the engine
// restarting, or removed outside the control plane. So was one the command
// found gone (a 404 from the server) before its TTL, that no one deleted,
// and whose container is gone from the engine. The command's failure after
// that is not the submission's, and the reason names what the engine said.

// UnexplainedVanish describes such a sandbox of the command ("" if none, or
// when the target cannot say: then nothing changes). Asked once.
func (rec *Record) UnexplainedVanish(ctx context.Context) string {
	rec.vanishOnce.Do(func() {
		if rec.Fate == nil {
			return
		}
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		rec.vanishWhy = VanishedUnexplained(c, rec.Observed, rec.DrillSandbox, rec.Fate)
	})
	return rec.vanishWhy
}

// VanishedUnexplained is UnexplainedVanish on lifecycle calls (the server's
// 404 is the sign a sandbox is gone; execd's 404 is a missing file), the
// drill's sandbox (excluded) and the target's view of a sandbox.
func VanishedUnexplained(ctx context.Context, lifecycle []observe.Call, drillSandbox string,
	fate func(context.Context, string) (SandboxFate, error)) string {
	calls := slices.Clone(lifecycle)
	slices.SortStableFunc(calls, func(a, b observe.Call) int { return a.Time.Compare(b.Time) })
	asked := map[string]bool{}
	for _, create := range lifecycle {
		id := create.SandboxID
		if create.Method != http.MethodPost || !IsCreatePath(create.Path) || create.Status != 202 || id == "" || id == drillSandbox || asked[id] {
			continue
		}
		asked[id] = true
		ttl := CreateTTL(create.Body)
		ttlText := "no TTL (the create set no timeout)"
		if ttl > 0 {
			ttlText = fmt.Sprintf("its TTL was %s", ttl)
		}
		var own []observe.Call // the key's DELETEs of it, in time order
		for _, c := range calls {
			if c.SandboxID == id && !c.Time.Before(create.Time) && c.Method == http.MethodDelete && IsSandboxPath(c.Path, id) {
				own = append(own, c)
			}
		}
		f, err := fate(ctx, id)
		if err != nil {
			continue // the target cannot say
		}
		if why := stoppedByMachine(create, ttl, ttlText, own, f); why != "" {
			return why
		}
		if why := goneWithNoDelete(create, ttl, ttlText, calls, f); why != "" {
			return why
		}
	}
	return ""
}

// stoppedByMachine: the engine says the sandbox's container stopped, at a
// time it names, before its TTL, and nothing the grader knows of asked for
// that: no DELETE of it sent by the key before then, none in the control
// plane's log but the key's own sent after it stopped.
func stoppedByMachine(create observe.Call, ttl time.Duration, ttlText string, own []observe.Call, f SandboxFate) string {
	if !f.Stopped || f.StoppedAt.IsZero() {
		return ""
	}
	after := f.StoppedAt.Sub(create.Time)
	if ttl > 0 && after >= ttl {
		return "" // expired: the server's TTL, as the command asked
	}
	later := 0 // the key's DELETEs that succeeded after the stop
	for _, c := range own {
		if !c.Time.After(f.StoppedAt) {
			return "" // the key asked for it first
		}
		if c.Status >= 200 && c.Status < 300 {
			later++
		}
	}
	if len(f.Deletes) > later {
		return "" // someone else deleted it through the control plane (a drill, another client): not ordered, so not held against the target
	}
	now := "its container is still in the engine, stopped"
	if f.ContainerGone {
		now = "the engine holds no container of it now"
	}
	said := f.EngineSaid
	if said == "" {
		said = "the engine gave no reason"
	}
	return fmt.Sprintf("sandbox %s stopped %s after its create (%s) with no DELETE from anyone: none sent by the run's key before then "+
		"(recording proxy), none by a drill, none in the control plane's log but the run's own after it stopped (%d lines name it); "+
		"the engine says: %s; %s: the machine stopped it, not the control plane",
		create.SandboxID, after.Round(time.Millisecond), ttlText, f.LogNames, said, now)
}

// goneWithNoDelete: the command found the sandbox gone (a 404 from the
// server) before its TTL, no one deleted it, and its container is gone from
// the engine (which could not say when it stopped).
func goneWithNoDelete(create observe.Call, ttl time.Duration, ttlText string, calls []observe.Call, f SandboxFate) string {
	id := create.SandboxID
	var gone *observe.Call
	for i := range calls {
		c := &calls[i]
		if c.SandboxID != id || c.Time.Before(create.Time) {
			continue
		}
		if c.Status == 404 {
			gone = c
			break
		}
		if c.Method == http.MethodDelete && c.Status >= 200 && c.Status < 300 && IsSandboxPath(c.Path, id) {
			return "" // the command's own DELETE went through first
		}
	}
	if gone == nil {
		return ""
	}
	after := gone.Time.Sub(create.Time)
	if ttl > 0 && after >= ttl {
		return "" // expired: the server's TTL, as the command asked
	}
	if len(f.Deletes) > 0 || !f.ContainerGone {
		return "" // someone deleted it, or it is still there
	}
	said := ""
	if f.EngineSaid != "" {
		said = "; the engine says: " + f.EngineSaid
	}
	return fmt.Sprintf("sandbox %s disappeared %s after its create (%s): the subject found it gone (%s %s → 404 at %s) "+
		"with no DELETE from anyone: none by the run's key before then (recording proxy), none by a drill, none in the "+
		"control plane's log (%d lines name it), and the engine holds no container of it: it was removed outside the control plane%s",
		id, after.Round(time.Millisecond), ttlText, gone.Method, clip(gone.Path, 80), gone.Time.UTC().Format("15:04:05.000"), f.LogNames, said)
}

// CreateTTL is the timeout a create body asked for (0: none, no expiry).
func CreateTTL(body json.RawMessage) time.Duration {
	var b struct {
		Timeout *float64 `json:"timeout"`
	}
	if json.Unmarshal(body, &b) != nil || b.Timeout == nil || *b.Timeout <= 0 {
		return 0
	}
	return time.Duration(*b.Timeout * float64(time.Second))
}
