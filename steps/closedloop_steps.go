package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/closedloop"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// M1 and isolation, measured on the subject's own runs: what the server saw
// from each run's key (audit on the bundled server; the recording proxy's
// lifecycle calls on a real one).

func registerClosedLoopSteps(sc registrar) {
	sc.Step(`^the subject is run (\d+) times in a row on fixture "([^"]*)"$`, runInARow)
	sc.Step(`^each run created a sandbox, ran a command in it, wrote a file into it and read a file back$`, eachRunClosedLoop)
	sc.Step(`^each run destroyed its sandbox and confirmed it gone with its own key$`, eachRunDestroyed)
	sc.Step(`^no sandbox of these runs is left on the server$`, noneLeft)
	sc.Step(`^no sandbox of this run is left on the server$`, noneLeft)
	sc.Step(`^the platform fails the subject's execd operation (\d+) with (\d+) as a simulated fault$`, execdFault)
	sc.Step(`^the fault hit the subject's run$`, faultHit)
	sc.Step(`^the destroyed sandbox's execd endpoint no longer answers and the server lists none of it$`, endpointDead)
}

// baseCreateRequest is the smallest create request the harness's own probes
// need, labelled with the run so leftovers can be found.
func (e *Env) baseCreateRequest(purpose string) osb.CreateSandboxRequest {
	timeout := 300
	return osb.CreateSandboxRequest{
		Image:          &osb.ImageSpec{URI: "python:3.12"},
		Entrypoint:     []string{"tail", "-f", "/dev/null"},
		Timeout:        &timeout,
		ResourceLimits: map[string]string{"cpu": "1", "memory": "1Gi"},
		Metadata:       map[string]string{"capstone-run": e.opt.RunID, "capstone-purpose": purpose},
	}
}

func runInARow(ctx context.Context, n int, fixture string) error {
	s := state(ctx)
	for i := 1; i <= n; i++ {
		var r *subjectRun
		if i == 1 {
			r = s.env.runFixture(ctx, fixture) // shared with the other scenarios on this fixture
		} else {
			r = s.env.runSubject(ctx, fmt.Sprintf("%s-run%d", fixture, i), fixture, runOpts{})
		}
		s.runs = append(s.runs, r)
		// What the loops are judged on: the server's audit, or on a real
		// target the run's recording proxy (its execd calls).
		if s.env.mock() {
			s.addEvidence(r.evidence("audit.json")...)
		} else {
			s.addEvidence(r.evidence("endpoint-calls.json")...)
		}
	}
	s.run = s.runs[len(s.runs)-1]
	return nil
}

// theRuns are the scenario's subject runs (one or several).
func theRuns(s *scenario) []*subjectRun {
	if len(s.runs) > 0 {
		return s.runs
	}
	if s.run != nil {
		return []*subjectRun{s.run}
	}
	return nil
}

func eachRunClosedLoop(ctx context.Context) error {
	s := state(ctx)
	var problems, notes []string
	for i, r := range theRuns(s) {
		if err := r.judge(ctx); err != nil {
			return failf("run %d: %w", i+1, err)
		}
		saw, err := r.Saw(ctx)
		if err != nil {
			return harnessf("run %d: reading the audit: %v", i+1, err)
		}
		if len(saw.Created) == 0 {
			problems = append(problems, fmt.Sprintf("run %d created no sandbox", i+1))
			continue
		}
		cmds, ups, downs := closedloop.RoundTrip(saw, r.EndpointCalls, s.env.mock())
		if missing := closedloop.Missing(cmds, ups, downs); len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("run %d (sandbox %s) %s", i+1, saw.Created[0], strings.Join(missing, ", ")))
		}
		notes = append(notes, fmt.Sprintf("run %d: %d command(s), %d upload(s), %d download(s)", i+1, cmds, ups, downs))
	}
	if len(problems) > 0 {
		return failf("%s", strings.Join(problems, "; "))
	}
	if !s.env.mock() {
		s.note("from the recording proxy's records of the runs' execd calls (a command counts once its stream ended with execd's "+
			"terminal event, whatever its exit code; the proxy reads it as it forwards the stream): %s", strings.Join(notes, "; "))
		return nil
	}
	s.note("%s", strings.Join(notes, "; "))
	return nil
}

func eachRunDestroyed(ctx context.Context) error {
	s := state(ctx)
	runs := theRuns(s)
	if len(runs) == 0 {
		return harnessf("the subject was not run in this scenario")
	}
	var problems []string
	for i, r := range runs {
		if err := r.judge(ctx); err != nil && !r.killed() {
			return failf("run %d: %w", i+1, err)
		}
		saw, err := r.Saw(ctx)
		if err != nil {
			return harnessf("run %d: reading the audit: %v", i+1, err)
		}
		s.addEvidence(filepath.Join(r.RelDir, "lifecycle-calls.json"))
		if len(saw.Created) == 0 {
			problems = append(problems, fmt.Sprintf("run %d created no sandbox, so it destroyed none", i+1))
		}
		for _, id := range saw.Created {
			switch deleted, confirmed := closedloop.DestroyedByKey(saw, id); {
			case !deleted:
				problems = append(problems, fmt.Sprintf("run %d never deleted its sandbox %s (no DELETE → 204 with its key)", i+1, id))
			case !confirmed:
				problems = append(problems, fmt.Sprintf("run %d deleted %s but never confirmed it gone (no 404 seen by its key afterwards)", i+1, id))
			}
		}
	}
	if len(problems) > 0 {
		return failf("%s", strings.Join(problems, "; "))
	}
	s.note("%d run(s): each deleted its sandbox (204) and then saw 404, with its own key", len(runs))
	return nil
}

// noneLeft checks that every sandbox the scenario's runs created is gone.
func noneLeft(ctx context.Context) error {
	s := state(ctx)
	runs := theRuns(s)
	if len(runs) == 0 {
		return harnessf("the subject was not run in this scenario")
	}
	var alive []string
	var lines []string
	total := 0
	for _, r := range runs {
		saw, err := r.Saw(ctx)
		if err != nil {
			return harnessf("reading the audit trail: %v", err)
		}
		for _, id := range saw.Created {
			total++
			c, cancel := ctxTimeout(ctx, 10*time.Second)
			res, err := s.env.client.GetSandbox(c, id)
			cancel()
			if err != nil {
				return harnessf("GET %s: %v", id, err)
			}
			lines = append(lines, fmt.Sprintf("%s → %s", res.RequestLine, res.StatusLine))
			if res.Status != 404 {
				alive = append(alive, fmt.Sprintf("%s (%d)", id, res.Status))
			}
		}
	}
	s.addEvidence(s.env.writeEvidence(firstID(s), "residual-"+s.slug()+".txt", []byte(strings.Join(lines, "\n")+"\n")))
	if total == 0 {
		return failf("the subject created no sandbox, so there is no closed loop to leave nothing behind")
	}
	if len(alive) > 0 {
		return failf("sandboxes the subject created are still on the server: %s", strings.Join(alive, ", "))
	}
	return nil
}

func firstID(s *scenario) string {
	if len(s.ids) > 0 {
		return s.ids[0]
	}
	return "run"
}

func intPtrString(p *int) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// execdFault arms the bundled server to fail the subject's Nth execd
// operation with status, keyed to the run's API key.
func execdFault(ctx context.Context, call, status int) error {
	s := state(ctx)
	d := &drill{Name: fmt.Sprintf("execd-%d-fails-%d", call, status), Available: mockOnly}
	if ok, why := d.Available(s.env); !ok {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s", why)
	}
	d.Opts.prepare = func(ctx context.Context, r *subjectRun) error {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := s.env.client.Admin().ExecdFault(c, r.KeyFP, call, status)
		if err != nil {
			return err
		}
		if !res.OK() {
			return fmt.Errorf("/_mock/faults/execd answered %d: %s", res.Status, excerpt(res.Body, 200))
		}
		d.logf("execd operation %d of the run's sandboxes will answer %d", call, status)
		return nil
	}
	d.Opts.finish = func(ctx context.Context, r *subjectRun) {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		defer cancel()
		_, _ = s.env.client.Admin().ClearExecdFault(c, r.KeyFP)
	}
	d.keyed = true
	s.drill = d
	return nil
}

func faultHit(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	s.addEvidence(filepath.Join(r.RelDir, "audit.json"))
	for _, ev := range saw.Events {
		if ev.Kind == "fault" && ev.Fault != nil && ev.Fault.Name == "execd-fault" && ev.Fault.Active {
			s.note("injected: %s", ev.Fault.Detail)
			return nil
		}
	}
	return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
		"the fault never hit: the subject made fewer execd operations (commands, uploads, downloads) than the one the fault was armed for (it created %d sandbox(es))", len(saw.Created))
}

// endpointDead dials the execd endpoint of each sandbox the subject
// destroyed: it must no longer answer (a security property: a destroyed
// sandbox is out of reach).
func endpointDead(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	var destroyed []string
	for _, id := range saw.Created {
		if d, _ := closedloop.DestroyedByKey(saw, id); d {
			destroyed = append(destroyed, id)
		}
	}
	if len(destroyed) == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the subject destroyed no sandbox (it created %d), so there was no destroyed sandbox to probe", len(saw.Created))
	}
	if err := closedloop.ListsNone(ctx, s.env.client, destroyed); err != nil {
		return err
	}
	if !s.env.mock() {
		if err := closedloop.NoEndpoint(ctx, s.env.client, destroyed); err != nil {
			return err
		}
		s.note("the server resolves no endpoint for the %d destroyed sandbox(es)", len(destroyed))
		return nil
	}
	lines, err := closedloop.EndpointsDead(ctx, s.env.client, destroyed)
	if err != nil {
		return verdict(ctx, "", err)
	}
	s.addEvidence(s.env.writeEvidence("isolation", "destroyed-endpoints-"+s.slug()+".txt", []byte(strings.Join(lines, "\n")+"\n")))
	s.note("the execd endpoint(s) of %d destroyed sandbox(es) no longer answer", len(destroyed))
	return nil
}

// scenarioLabel is a metadata value unique to this scenario, so the
// harness's own probe sandboxes are found by scenario.
func (s *scenario) scenarioLabel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.label == "" {
		s.label = randomHex(6)
	}
	return s.label
}
