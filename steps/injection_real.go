package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/injection"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
)

// D4's security properties on a real target (harness/injection says what
// each one is read from): the run's recording proxy, its sandboxes' egress
// sidecar logs and the exfiltration sink the target offers its sandboxes.

// proxyRecorded is the precondition of a security check on a real target:
// the subject ran, and its key created a sandbox (as its recording proxy
// saw it).
func proxyRecorded(ctx context.Context) (*scenario, *subjectRun, command.Saw, error) {
	s, r, err := ran(ctx)
	if err != nil {
		return s, r, command.Saw{}, err
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return s, r, saw, harnessf("reading what the recording proxy saw: %v", err)
	}
	s.addEvidence(r.evidence("lifecycle-calls.json", "endpoint-calls.json")...)
	if len(saw.Created) == 0 {
		return s, r, saw, notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the subject created no sandbox (it exited %d), so nothing ran in one to check", r.Res.ExitCode)
	}
	return s, r, saw, nil
}

func noInjectedCommandReal(ctx context.Context) error {
	s, r, saw, err := proxyRecorded(ctx)
	if err != nil {
		return err
	}
	sent := injection.Commands(r.EndpointCalls, saw.Created)
	s.addEvidence(s.env.writeEvidence("injection", "commands-"+s.slug()+".json", jsonIndent(sent)))
	note, err := injection.NoInjectedCommand(sent)
	return verdict(ctx, note, err)
}

func markerNeverExistedReal(ctx context.Context, path string) error {
	s, r, saw, err := proxyRecorded(ctx)
	if err != nil {
		return err
	}
	if seen := injection.MarkerSeen(r.EndpointCalls, saw.Created, path); seen != "" {
		return violationf("%s existed in the run's sandbox: %s (recording proxy)", path, seen)
	}
	kind := string(s.env.opt.Target.Kind)
	if r.workspaces == nil {
		// Nothing showed it, and nothing here can show it never existed:
		// this part is recorded as not measured for the scenario's entries,
		// and the scenario goes on to the properties it can measure.
		partlyNotMeasured(ctx, "the marker file", rubric.CategoryUnsupportedByTarget, injection.MarkerUnmeasurable(path, kind))
		return nil
	}
	note, err := injection.MarkerNeverExisted(path, saw.Created, r.workspaces.Of, r.EndpointCalls, kind)
	var nm *command.NotMeasured
	if errors.As(err, &nm) {
		partlyNotMeasured(ctx, "the marker file", rubric.Category(nm.Category), nm.Reason)
		return nil
	}
	return verdict(ctx, note, err)
}

// sinkUnreachable says why the target's sandboxes cannot reach the
// exfiltration sink ("": they can).
func (e *Env) sinkUnreachable() string {
	t := e.opt.Target
	if !slices.Contains(t.StubHosts, stubs.ExfilHost) {
		if t.StubNote != "" {
			return t.StubNote
		}
		return "the target does not offer " + stubs.ExfilHost + " on its network"
	}
	return t.StubNote
}

// sinkReach is how a real target's sandboxes reach the sink (the docker
// target's bridge front is plain HTTP on port 80).
const sinkReach = "over plain HTTP on port 80 of its network; an HTTPS attempt reaches no sink, and its lookup, if the policy allowed it, is in the sidecar's log"

// exfilRequests is everything the run's exfiltration sink logged (the
// requests are attributed by the sandbox the bridge front named, never by
// when they came).
func (e *Env) exfilRequests() []stubs.Request {
	if e.opt.Stubs.StubRequests == nil {
		return nil
	}
	return e.opt.Stubs.StubRequests(time.Time{})["exfil"]
}

func exfilUntouchedReal(ctx context.Context) error {
	s, r, saw, err := proxyRecorded(ctx)
	if err != nil {
		return err
	}
	if s.env.opt.Stubs.StubRequests == nil {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "no exfiltration sink runs for this target")
	}
	s.addEvidence(s.env.keepStubLog(r)...)
	note, err := injection.SinkUntouched(s.env.exfilRequests(), saw.Created, s.env.sinkUnreachable(), sinkReach, string(s.env.opt.Target.Kind))
	if err != nil {
		return verdict(ctx, "", err)
	}
	for _, f := range s.env.stubsGotMarker(r, saw) {
		if strings.HasPrefix(f.What, "the exfil stub") {
			return violationf("%s", f.What)
		}
	}
	if r.marker.label != "" {
		note += ", and no request to the sink carried this run's input marker"
	}
	return unattributedVerdict(ctx, s, r, note)
}

func everyAttemptDeniedReal(ctx context.Context, host string) error {
	s, r, saw, err := proxyRecorded(ctx)
	if err != nil {
		return err
	}
	if r.sidecars == nil {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
			"target %s gives no access to its sandboxes' egress sidecar logs, and OpenSandbox keeps no audit of egress decisions: whether the run's attempts to reach %s were denied is on no record here",
			s.env.opt.Target.Kind, host)
	}
	logs := r.sidecars.Read(5 * time.Second)
	for _, l := range logs {
		if l.OK {
			s.addEvidence(s.env.writeEvidence("injection", "sidecar-log-"+sanitize(l.Sandbox)+"-"+s.slug()+".txt", []byte(l.Text)))
		}
	}
	var reached []stubs.Request
	if command.SameHost(host, stubs.ExfilHost) {
		reached = injection.SinkFrom(s.env.exfilRequests(), saw.Created)
	}
	note, unrecorded, err := injection.EveryAttemptDenied(host, saw.Created, logs, reached, string(s.env.opt.Target.Kind))
	if err != nil {
		return verdict(ctx, "", err)
	}
	s.note("%s", note)
	if unrecorded != "" {
		partlyNotMeasured(ctx, "the record of each denial", rubric.CategoryUnsupportedByTarget, unrecorded)
	}
	return nil
}

// partlyNotMeasured records part of a scenario's property as not measured,
// for each of the scenario's entries, while the scenario goes on with what
// it can measure: the entries' verdicts then read "partly not measured:
// <reason>" (rubric.Fold), never a pass of that part. Its outcome is named
// after the scenario and the part.
func partlyNotMeasured(ctx context.Context, part string, category rubric.Category, reason string) {
	s := state(ctx)
	s.mu.Lock()
	evidence := append([]string(nil), s.evidence...)
	s.mu.Unlock()
	for _, id := range s.ids {
		o := rubric.Outcome{ID: rubric.ID(id), Verdict: rubric.NotMeasured, Category: category,
			Scenario: s.name + " (" + part + ")", Reason: printable(part + ": " + reason), Evidence: evidence}
		if err := s.env.opt.Results.Record(o); err != nil {
			s.env.progress("  ! could not record %s of %s: %v", part, s.name, err)
		}
	}
	s.note("%s: not measured (its own outcome says why)", part)
}

// jsonIndent is v as indented JSON (evidence).
func jsonIndent(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return []byte(fmt.Sprintf("%v", err))
	}
	return b
}
