package steps

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// M1: the minimum closed loop, done by the harness itself the way the course's
// skeleton does it: create, run, write and read back, destroy in a deferred
// cleanup and confirm 404.

func registerClosedLoopSteps(sc *godog.ScenarioContext) {
	sc.Step(`^I run the closed loop (\d+) times$`, func(ctx context.Context, n int) error { return runLoops(ctx, n, false) })
	sc.Step(`^I run the closed loop with a failure injected after the command step$`, func(ctx context.Context) error { return runLoops(ctx, 1, true) })
	sc.Step(`^every run read "([^"]*)" back from python3 -c "print\(1\+1\)"$`, everyLoopPrinted)
	sc.Step(`^every run read back the file it wrote, byte for byte$`, everyLoopFileOK)
	sc.Step(`^every run's sandbox answered 404 after its deferred destroy$`, everyLoop404)
	sc.Step(`^no sandbox of this run is left on the server$`, noneLeft)
	sc.Step(`^the run reported the injected failure$`, injectedFailureReported)
}

var errInjected = errors.New("injected failure after the command step (M1 drill)")

type loopResult struct {
	sandboxID  string
	stdout     string
	exitCode   *int
	fileOK     bool
	fileDetail string
	deleteCode int
	getAfter   int
	err        error
	transcript []string
}

// scenarioLabel is a metadata value unique to this scenario, so "nothing left"
// is judged on this scenario's sandboxes only, even with concurrent scenarios.
func (s *scenario) scenarioLabel() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.label == "" {
		s.label = randomHex(6)
	}
	return s.label
}

func runLoops(ctx context.Context, n int, inject bool) error {
	s := state(ctx)
	label := s.scenarioLabel()
	for i := 0; i < n; i++ {
		r := s.env.closedLoop(ctx, label, inject)
		s.loops = append(s.loops, r)
		s.mu.Lock()
		s.exchanges = append(s.exchanges, fmt.Sprintf("run %d:\n  %s", i+1, strings.Join(r.transcript, "\n  ")))
		s.mu.Unlock()
		if r.err != nil && !(inject && errors.Is(r.err, errInjected)) {
			return failf("closed loop run %d: %v", i+1, r.err)
		}
	}
	s.mu.Lock()
	text := strings.Join(s.exchanges, "\n\n") + "\n"
	s.mu.Unlock()
	s.addEvidence(s.env.writeEvidence("M1", "closed-loop-"+s.slug()+".txt", []byte(text)))
	return nil
}

// closedLoop is one create → run → write/read → destroy → 404 cycle. The
// destroy is deferred, so it happens whatever fails in between.
func (e *Env) closedLoop(ctx context.Context, label string, inject bool) (r loopResult) {
	logf := func(format string, args ...any) { r.transcript = append(r.transcript, fmt.Sprintf(format, args...)) }
	req := e.baseCreateRequest("m1-closed-loop")
	req.Metadata["capstone-scenario"] = label
	c, cancel := ctxTimeout(ctx, 3*time.Minute)
	defer cancel()

	res, err := e.client.CreateSandbox(c, req)
	if err != nil {
		r.err = err
		return r
	}
	logf("%s → %s", res.RequestLine, res.StatusLine)
	if !res.Decoded {
		r.err = fmt.Errorf("create answered %d: %s", res.Status, excerpt(res.Body, 300))
		return r
	}
	r.sandboxID = res.Value.ID
	defer func() {
		// finally: destroy, then prove it with a GET.
		dc, dcancel := ctxTimeout(context.WithoutCancel(ctx), 60*time.Second)
		defer dcancel()
		if del, err := e.client.DeleteSandbox(dc, r.sandboxID); err == nil {
			r.deleteCode = del.Status
			logf("%s → %s", del.RequestLine, del.StatusLine)
		} else {
			logf("delete: %v", err)
		}
		if get, err := e.client.GetSandbox(dc, r.sandboxID); err == nil {
			r.getAfter = get.Status
			logf("%s → %s", get.RequestLine, get.StatusLine)
		} else {
			logf("get after delete: %v", err)
		}
	}()

	ex, err := e.readyExecd(c, r.sandboxID)
	if err != nil {
		r.err = err
		return r
	}
	run, err := ex.Run(c, osb.CommandRequest{Command: `python3 -c "print(1+1)"`, TimeoutMs: 60_000})
	if err != nil {
		r.err = fmt.Errorf("run: %w", err)
		return r
	}
	logf("%s → %s", run.RequestLine, run.StatusLine)
	if !run.Decoded {
		r.err = fmt.Errorf("command answered %d: %s", run.Status, excerpt(run.Body, 300))
		return r
	}
	r.stdout = strings.TrimSpace(run.Value.StdoutText())
	r.exitCode = run.Value.ExitCode
	logf("stdout=%q exit=%s", r.stdout, intPtrString(run.Value.ExitCode))
	if inject {
		r.err = errInjected
		logf("injected failure: the deferred destroy must still run")
		return r
	}

	payload := make([]byte, 4096)
	_, _ = rand.Read(payload)
	payload = append([]byte("capstone M1 round trip\n"), payload...)
	up, err := ex.Upload(c, osb.UploadFile{Path: "/workspace/roundtrip.bin", Content: bytes.NewReader(payload)})
	if err != nil {
		r.err = fmt.Errorf("upload: %w", err)
		return r
	}
	logf("%s → %s", up.RequestLine, up.StatusLine)
	var got bytes.Buffer
	dl, err := ex.Download(c, "/workspace/roundtrip.bin", &got)
	if err != nil {
		r.err = fmt.Errorf("download: %w", err)
		return r
	}
	logf("%s → %s (%d bytes)", dl.RequestLine, dl.StatusLine, got.Len())
	r.fileOK = up.OK() && dl.OK() && bytes.Equal(got.Bytes(), payload)
	if !r.fileOK {
		r.fileDetail = fmt.Sprintf("upload %d, download %d, wrote %d bytes, read %d", up.Status, dl.Status, len(payload), got.Len())
	}
	return r
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

func everyLoopPrinted(ctx context.Context, want string) error {
	s := state(ctx)
	if len(s.loops) == 0 {
		return failf("no closed loop ran")
	}
	for i, r := range s.loops {
		if r.stdout != want || r.exitCode == nil || *r.exitCode != 0 {
			return failf("run %d printed %q with exit code %s, want %q and 0", i+1, r.stdout, intPtrString(r.exitCode), want)
		}
	}
	return nil
}

func everyLoopFileOK(ctx context.Context) error {
	s := state(ctx)
	for i, r := range s.loops {
		if !r.fileOK {
			return failf("run %d: file round trip differs: %s", i+1, r.fileDetail)
		}
	}
	return nil
}

func everyLoop404(ctx context.Context) error {
	s := state(ctx)
	if len(s.loops) == 0 {
		return failf("no closed loop ran")
	}
	for i, r := range s.loops {
		if r.sandboxID == "" {
			return failf("run %d never created a sandbox: %v", i+1, r.err)
		}
		if r.deleteCode != 204 {
			return failf("run %d: delete answered %d, want 204", i+1, r.deleteCode)
		}
		if r.getAfter != 404 {
			return failf("run %d: GET after delete answered %d, want 404", i+1, r.getAfter)
		}
	}
	return nil
}

func injectedFailureReported(ctx context.Context) error {
	s := state(ctx)
	for _, r := range s.loops {
		if errors.Is(r.err, errInjected) {
			return nil
		}
	}
	return failf("the injected failure was not reported by the loop")
}

func noneLeft(ctx context.Context) error {
	s := state(ctx)
	if s.run != nil {
		return subjectLeftNone(ctx, s)
	}
	c, cancel := ctxTimeout(ctx, 30*time.Second)
	defer cancel()
	meta := map[string]string{"capstone-run": s.env.opt.RunID}
	if s.label != "" {
		meta["capstone-scenario"] = s.label
	}
	res, err := s.env.client.ListSandboxes(c, osb.ListOptions{Metadata: meta, PageSize: 200})
	if err != nil {
		return failf("list: %v", err)
	}
	if !res.Decoded {
		return failf("list answered %d: %s", res.Status, excerpt(res.Body, 300))
	}
	var alive []string
	for _, it := range res.Value.Items {
		alive = append(alive, it.ID+" ("+it.Status.State+")")
	}
	s.addEvidence(s.env.writeEvidence(firstID(s), "residual-list-"+s.slug()+".txt",
		[]byte(fmt.Sprintf("%s → %s\n%s\n", res.RequestLine, res.StatusLine, string(res.Body)))))
	if len(alive) > 0 {
		return failf("sandboxes of this scenario still listed: %s", strings.Join(alive, ", "))
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

// subjectLeftNone checks every sandbox the subject's key created answers 404.
func subjectLeftNone(ctx context.Context, s *scenario) error {
	r := s.run
	if err := s.env.loadAudit(ctx, r); err != nil {
		return failf("audit: %v", err)
	}
	var alive []string
	for _, id := range r.sandboxes {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		res, err := s.env.client.GetSandbox(c, id)
		cancel()
		if err != nil || res.Status != 404 {
			alive = append(alive, id)
		}
	}
	if len(alive) > 0 {
		return failf("sandboxes of the subject still answer: %s", strings.Join(alive, ", "))
	}
	return nil
}
