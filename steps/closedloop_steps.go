package steps

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
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
		var cmds, ups, downs int
		if s.env.mock() {
			for _, ev := range saw.Events {
				switch {
				case ev.Kind == "command" && ev.Command != nil && ev.Command.ExitCode != nil:
					cmds++
				case ev.Kind == "file" && ev.File != nil && ev.File.Op == "upload":
					ups++
				case ev.Kind == "file" && ev.File != nil && ev.File.Op == "download":
					downs++
				}
			}
		} else {
			// A real target has no audit of what ran inside a sandbox; the
			// run's own recording proxy saw its execd calls.
			cmds, ups, downs = command.ExecdRoundTrip(r.EndpointCalls, saw.Created)
		}
		var missing []string
		if cmds == 0 {
			missing = append(missing, "ran no command to completion")
		}
		if ups == 0 {
			missing = append(missing, "wrote no file")
		}
		if downs == 0 {
			missing = append(missing, "read no file back")
		}
		if len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("run %d (sandbox %s) %s", i+1, saw.Created[0], strings.Join(missing, ", ")))
		}
		notes = append(notes, fmt.Sprintf("run %d: %d command(s), %d upload(s), %d download(s)", i+1, cmds, ups, downs))
	}
	if len(problems) > 0 {
		return failf("%s", strings.Join(problems, "; "))
	}
	if !s.env.mock() {
		s.note("from the recording proxy's records of the runs' execd calls (a command is one execd answered 200 and streamed; "+
			"its exit code is inside the stream, which the proxy does not read): %s", strings.Join(notes, "; "))
		return nil
	}
	s.note("%s", strings.Join(notes, "; "))
	return nil
}

// destroyedByKey says whether the run's key deleted the sandbox (204) and
// then saw it gone (a GET or another call answering 404).
func destroyedByKey(saw command.Saw, id string) (deleted, confirmed bool) {
	var deletedAt time.Time
	for _, ev := range saw.Calls {
		lc := ev.Lifecycle
		if lc == nil || ev.SandboxID != id {
			continue
		}
		if lc.Method == "DELETE" && lc.Status == 204 && !deleted {
			deleted, deletedAt = true, ev.Time
		}
		if deleted && lc.Status == 404 && !ev.Time.Before(deletedAt) {
			confirmed = true
		}
	}
	return deleted, confirmed
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
			switch deleted, confirmed := destroyedByKey(saw, id); {
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
		if d, _ := destroyedByKey(saw, id); d {
			destroyed = append(destroyed, id)
		}
	}
	if len(destroyed) == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the subject destroyed no sandbox (it created %d), so there was no destroyed sandbox to probe", len(saw.Created))
	}
	if err := listsNone(ctx, s, destroyed); err != nil {
		return err
	}
	if !s.env.mock() {
		for _, id := range destroyed {
			c, cancel := ctxTimeout(ctx, 10*time.Second)
			res, err := s.env.client.GetEndpoint(c, id, osb.DefaultExecdPort, false)
			cancel()
			if err == nil && res.OK() {
				return violationf("the server still resolves an endpoint for destroyed sandbox %s: %s", id, res.StatusLine)
			}
		}
		s.note("the server resolves no endpoint for the %d destroyed sandbox(es)", len(destroyed))
		return nil
	}
	c, cancel := ctxTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := s.env.client.Admin().Sandboxes(c)
	if err != nil || !res.Decoded {
		return harnessf("the bundled server's sandbox records: %v", auditErr(res, err))
	}
	addr := map[string]string{}
	for _, sb := range res.Value.Sandboxes {
		addr[sb.ID] = sb.ExecdEndpoint
	}
	var lines []string
	for _, id := range destroyed {
		ep := addr[id]
		if ep == "" {
			return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the server kept no endpoint record for destroyed sandbox %s", id)
		}
		// The bundled server may keep a removed sandbox's port listening to
		// record late calls (it resets them): what matters is that nothing
		// of the sandbox answers there any more.
		u := "http://" + strings.TrimSuffix(ep, "/") + "/ping"
		c, cancel := ctxTimeout(ctx, 3*time.Second)
		req, _ := http.NewRequestWithContext(c, http.MethodGet, u, nil)
		res, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			_ = res.Body.Close()
			if res.StatusCode < 300 {
				return violationf("destroyed sandbox %s still answers on its execd endpoint: GET %s → %s", id, u, res.Status)
			}
			lines = append(lines, fmt.Sprintf("%s: GET %s → %s (not the sandbox)", id, u, res.Status))
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: GET %s → %v", id, u, err))
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

// readyExecd resolves the execd endpoint and waits for /ping, as the SDKs do.
func (e *Env) readyExecd(ctx context.Context, id string) (*osb.Execd, error) {
	ep, err := e.client.GetEndpoint(ctx, id, osb.DefaultExecdPort, false)
	if err != nil {
		return nil, fmt.Errorf("endpoint: %w", err)
	}
	if !ep.Decoded {
		return nil, fmt.Errorf("endpoint answered %d: %s", ep.Status, excerpt(ep.Body, 300))
	}
	ex, err := e.client.Execd(ep.Value)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		pc, cancel := ctxTimeout(ctx, 5*time.Second)
		p, err := ex.Ping(pc)
		cancel()
		if err == nil && p.OK() {
			return ex, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("execd at %s never answered /ping within 30 s", ep.Value.Endpoint)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// listsNone checks the server's list holds none of the destroyed sandboxes.
func listsNone(ctx context.Context, s *scenario, ids []string) error {
	gone := map[string]bool{}
	for _, id := range ids {
		gone[id] = true
	}
	c, cancel := ctxTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.env.client.ListSandboxes(c, osb.ListOptions{PageSize: 200})
	if err != nil {
		return harnessf("list: %v", err)
	}
	if !res.Decoded {
		return harnessf("list answered %d: %s", res.Status, excerpt(res.Body, 200))
	}
	for _, it := range res.Value.Items {
		if gone[it.ID] {
			return violationf("the server still lists sandbox %s (%s) after the subject destroyed it", it.ID, it.Status.State)
		}
	}
	return nil
}
