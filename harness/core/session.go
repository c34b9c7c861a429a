package core

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"github.com/osb-capstone/acceptance/harness/observe"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cucumber/godog"

	"github.com/osb-capstone/acceptance/features"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/report"
	_ "github.com/osb-capstone/acceptance/harness/report/render" // registers the bundle's renderers
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// Config is a grading session's plan: what to grade against and how.
type Config struct {
	Target         string        // "mock" or the real server's URL (for the report)
	TargetKind     rubric.Target // mock or real
	Tags           string        // godog tag expression
	Seed           int64
	Concurrency    int // scenarios at once within one submission
	SubjectTimeout time.Duration
	Baselines      report.Baselines
	Wheels         string // the stub package index's wheels
	SelfExe        string // the acceptance binary
	Versions       map[string]string
	// SkipPreflight leaves the target preflight out (tests of the core only).
	SkipPreflight bool
	// Repeat runs every scenario this many times (default 1); an entry a
	// scenario passed in some repetitions and failed in others is flaky.
	Repeat int
	// Confine confines every submission command (harness/confine); nil runs
	// them unconfined and Unconfined says why (in every report).
	Confine    *confine.Config
	Unconfined string
	// SubmissionTimeout bounds the total time of one submission's commands
	// (0: DefaultSubmissionTimeout).
	SubmissionTimeout time.Duration
	// JournalKeys is the grader-only directory where each bundle's journal
	// key is kept (report.Options.JournalKeys); empty: journals unsigned.
	JournalKeys string
	// StubsStarted, when a test sets it, is told the session's loopback
	// stubs (public hostname → "http://127.0.0.1:port") as they start. It
	// is a test's seam only: the calibration test plays a local process
	// outside every submission that sends them requests (docs/blame.md,
	// unattributable requests); grading never sets it.
	StubsStarted func(upstreams map[string]string)
}

// DefaultSubmissionTimeout bounds the summed wall time of one submission's
// commands (docs/confinement.md).
const DefaultSubmissionTimeout = 15 * time.Minute

// Session is one started target with its stubs and preflight, shared by
// every submission graded in it.
type Session struct {
	cfg       Config
	stubs     *stubs.Set
	target    StartedTarget
	preflight *report.Preflight
	inputs    *Inputs // generated once, shared by every submission
	shared    bool
	faults    sync.RWMutex // server-wide simulated faults vs every submission's runs
	graded    atomic.Int64 // submissions graded so far: numbers each one's tenant
	// views: a real target's (no tenants) submissions' views, which tell the
	// boxes' guards whose sandbox is whose (observe.View.Mine).
	views *observe.Class
}

// Open starts the stubs and the target and runs the preflight. A preflight
// failure is not an error: every bundle graded in the session reports it and
// is incomplete.
func Open(ctx context.Context, cfg Config, start TargetStarter) (*Session, error) {
	if cfg.SubjectTimeout <= 0 {
		return nil, fmt.Errorf("the subject timeout must be positive, got %s", cfg.SubjectTimeout)
	}
	if cfg.Concurrency < 1 {
		cfg.Concurrency = 1
	}
	if cfg.SubmissionTimeout <= 0 {
		cfg.SubmissionTimeout = DefaultSubmissionTimeout
	}
	if cfg.Confine != nil {
		// Boxes a SIGKILLed grader left behind go before anything starts.
		if _, err := confine.Reap(cfg.Confine.StateDir); err != nil {
			return nil, fmt.Errorf("cleaning up after an earlier grader: %w", err)
		}
	}
	st, err := stubs.Start(stubs.Config{WheelsDir: cfg.Wheels, DataAPIToken: "capstone-data-" + randomHex(16)})
	if err != nil {
		return nil, fmt.Errorf("starting the loopback stubs: %w", err)
	}
	if cfg.StubsStarted != nil {
		cfg.StubsStarted(st.Upstreams())
	}
	t, err := start(ctx, st.Upstreams())
	if err != nil {
		st.Close()
		return nil, err
	}
	if t.Close == nil {
		t.Close = func() {}
	}
	s := &Session{cfg: cfg, stubs: st, target: t, views: observe.NewClass()}
	if s.inputs, err = NewInputs(); err != nil {
		s.Close()
		return nil, fmt.Errorf("a directory for the generated inputs: %w", err)
	}
	if !cfg.SkipPreflight {
		cl, err := osb.New(t.Domain, t.APIKey)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.preflight = Preflight(ctx, cl, "preflight-"+randomHex(4))
	}
	return s, nil
}

// Preflight is the session's preflight result (nil when skipped).
func (s *Session) Preflight() *report.Preflight { return s.preflight }

// Target is the session's target.
func (s *Session) Target() Target { return s.target.Target }

// SetShared says other submissions are graded at the same time.
func (s *Session) SetShared(shared bool) { s.shared = shared }

// Close stops the target and the stubs.
func (s *Session) Close() {
	s.target.Close()
	s.stubs.Close()
	s.inputs.Close()
}

// Graded is one submission's result.
type Graded struct {
	Dir string // its report bundle
	Doc report.Document
	Err error // the harness could not grade it (the bundle may still hold a report)
}

// Grade grades one submission into the report bundle out (new or empty).
func (s *Session) Grade(ctx context.Context, sub *submission.Submission, out string, factory SuiteFactory, progress io.Writer) Graded {
	g := Graded{Dir: out}
	// One tenant per graded submission: every key minted for it (runs,
	// contract, reap, tests, every repetition) shares it.
	tenant := fmt.Sprintf("submission:%d", s.graded.Add(1))
	// A real target has no tenants: the recording proxies give the
	// submission its view instead, one for all its commands and repetitions.
	var view *observe.View
	if s.target.MintAPIKey == nil {
		view = s.views.NewView()
	}
	runID := time.Now().UTC().Format("20060102T150405Z") + "-" + randomHex(3)
	subjectName := sub.Manifest.Run
	if sub.Source != submission.SourceCommand {
		subjectName = sub.Name()
		if sub.Dir != "" {
			subjectName += " (" + sub.Dir + ")"
		}
	}
	subDir := ""
	if sub.Source == submission.SourceManifest {
		subDir = sub.Dir
	}
	bundle, err := report.Open(out, rubric.Course, report.Meta{
		RunID: runID, Target: s.cfg.Target, TargetKind: s.cfg.TargetKind, Subject: subjectName, Submission: submission.Identity(sub.Dir), Seed: s.cfg.Seed, Tags: s.cfg.Tags,
		SubmissionDir: subDir, Builtin: sub.Source == submission.SourceBuiltin,
		Versions: copyMap(s.cfg.Versions), StartedAt: time.Now().UTC(), Command: "acceptance", Preflight: s.preflight,
	}, report.Options{Baselines: s.cfg.Baselines, JournalKeys: s.cfg.JournalKeys})
	if err != nil {
		g.Err = err
		return g
	}
	defer bundle.Close()
	defer bundle.Recover()
	if s.preflight != nil && !s.preflight.Passed {
		g.Doc, g.Err = bundle.Finalize()
		return g
	}
	token := "capstone-data-" + randomHex(16)
	s.stubs.DataAPI.AddToken(token)
	bundle.AddSecrets(s.target.APIKey, s.target.AdminToken, token)

	reps := max(s.cfg.Repeat, 1)
	var ends []int // outcomes recorded by the end of each repetition
	for rep := 1; rep <= reps && ctx.Err() == nil; rep++ {
		run := suiteRun{sub: sub, bundle: bundle, out: out, runID: runID, token: token, tenant: tenant, view: view, rep: rep, factory: factory, progress: progress}
		if err := s.runSuite(ctx, run); err != nil {
			bundle.Abort("the suite could not be set up: " + err.Error())
			g.Err = err
			break
		}
		ends = append(ends, len(bundle.Results().Outcomes()))
	}
	// Every suite of this submission has ended (D5 has judged the residue
	// its reap left): nothing made with its keys outlives its grade.
	s.releaseTenant(ctx, tenant, progress)
	if reps > 1 {
		for _, line := range recordFlaky(bundle.Results(), ends) {
			if progress != nil {
				fmt.Fprintln(progress, line)
			}
		}
	}
	if ctx.Err() != nil {
		bundle.Abort("interrupted by a signal")
	}
	g.Doc, g.Err = bundle.Finalize()
	return g
}

// releaseTimeout bounds the release of a submission's tenant.
const releaseTimeout = 2 * time.Minute

// releaseTenant asks the bundled server (over its admin API) to release the
// submission's tenant: its keys revoked, its sandboxes (and their processes),
// snapshots and named volumes removed. A real target has no tenants (its
// sandboxes are the submission's reap's business). A release that fails is
// the harness's problem, never the submission's: it is said on progress, and
// the server's Close removes what is left when the session ends.
func (s *Session) releaseTenant(ctx context.Context, tenant string, progress io.Writer) {
	if s.target.MintAPIKey == nil || s.target.Kind != rubric.TargetMock || s.target.AdminToken == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	cl, err := osb.New(s.target.Domain, s.target.APIKey, osb.WithAdminToken(s.target.AdminToken))
	var res *osb.Result[osb.TenantRelease]
	if err == nil {
		res, err = cl.Admin().ReleaseTenant(ctx, tenant)
	}
	if err == nil && res.Status != http.StatusOK {
		err = fmt.Errorf("POST /_mock/tenants/release answered %d: %s", res.Status, printableBody(res.Body))
	}
	if err != nil && progress != nil {
		fmt.Fprintf(progress, "harness: releasing the submission's sandboxes and volumes on the bundled server failed (they go when the server stops): %v\n", err)
	}
}

// printableBody is at most 200 bytes of a server's answer, quoted.
func printableBody(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	return strconv.Quote(string(b))
}

// suiteRun is one repetition of a submission's suite: what runSuite runs,
// for whom and where.
type suiteRun struct {
	sub      *submission.Submission
	bundle   *report.Bundle
	out      string        // the bundle's directory
	runID    string        // the grade's run id (a repetition after the first adds -r<rep>)
	token    string        // the submission's data-API token
	tenant   string        // the submission's tenant on the bundled server
	view     *observe.View // the submission's view through the recording proxies (a real target), or nil
	rep      int           // the repetition, from 1
	factory  SuiteFactory
	progress io.Writer // may be nil
}

// runSuite runs every selected scenario once (repetition r.rep) into the bundle.
func (s *Session) runSuite(ctx context.Context, r suiteRun) error {
	if r.rep > 1 {
		r.runID = fmt.Sprintf("%s-r%d", r.runID, r.rep)
		if r.progress != nil {
			fmt.Fprintf(r.progress, "repetition %d\n", r.rep)
		}
	}
	var mint func() (string, error)
	if m := s.target.MintAPIKey; m != nil {
		mint = func() (string, error) { return m(r.tenant) }
	} else {
		r.tenant = ""
	}
	suite, err := r.factory(SuiteInput{
		Target:         s.target.Target,
		Submission:     r.sub,
		SelfExe:        s.cfg.SelfExe,
		Results:        r.bundle.Results(),
		BundleDir:      r.out,
		RunID:          r.runID,
		SubjectTimeout: s.cfg.SubjectTimeout,
		Stubs:          s.stubHooks(r.token),
		MintAPIKey:     mint,
		Tenant:         r.tenant,
		View:           r.view,
		Progress:       r.progress,
		Secrets:        r.bundle.AddSecrets,
		FaultLock:      &s.faults,
		Repetition:     r.rep,
		Inputs:         s.inputs,

		Confine:           s.cfg.Confine,
		Unconfined:        s.cfg.Unconfined,
		SubmissionTimeout: s.cfg.SubmissionTimeout,
	})
	if err != nil {
		return err
	}
	defer suite.Close()
	name := "godog.log"
	cucumber := "cucumber.json"
	if r.rep > 1 {
		name, cucumber = fmt.Sprintf("godog-r%d.log", r.rep), fmt.Sprintf("cucumber-r%d.json", r.rep)
	}
	godogLog, err := os.Create(filepath.Join(r.out, name))
	if err != nil {
		return err
	}
	defer godogLog.Close()
	ts := godog.TestSuite{
		Name:                "capstone-acceptance",
		ScenarioInitializer: suite.InitializeScenario,
		Options: &godog.Options{
			Format:         "pretty,cucumber:" + filepath.Join(r.out, cucumber),
			Output:         inert.TextWriter(godogLog), // its step errors and step text can carry the submission's words
			NoColors:       true,
			FS:             features.FS,
			Paths:          []string{"."},
			Tags:           s.cfg.Tags,
			Concurrency:    s.cfg.Concurrency,
			Randomize:      s.cfg.Seed,
			Strict:         true,
			DefaultContext: ctx,
		},
	}
	if status := ts.Run(); status == 2 && ctx.Err() == nil {
		r.bundle.Abort("godog could not run the features (see " + name + ")")
	}
	return nil
}

// recordFlaky marks every entry a scenario passed in some repetitions and
// failed (or timed out) in others: it records one flaky outcome per entry and
// scenario, which the rubric's aggregation puts in place of that scenario's
// passed and failed outcomes. Flaky is never plain passed. ends[i] is the
// number of outcomes recorded when repetition i+1 ended; a repetition counts
// as failed for an entry and scenario when it recorded any failure or
// timeout for it, as passed when it recorded only passes. It returns one
// progress line per flaky outcome recorded.
func recordFlaky(res *rubric.Results, ends []int) []string {
	type key struct {
		id       rubric.ID
		scenario string
	}
	outs := res.Outcomes()
	passed, failed := map[key]int{}, map[key]int{}
	var order []key
	seen := map[key]bool{}
	start := 0
	for _, end := range ends {
		end = min(end, len(outs))
		repPass, repFail := map[key]bool{}, map[key]bool{}
		for _, o := range outs[start:end] {
			k := key{o.ID, o.Scenario}
			switch {
			case o.Verdict == rubric.Passed:
				repPass[k] = true
			case o.Verdict == rubric.Failed || o.Category == rubric.CategoryTimeout:
				repFail[k] = true
			default:
				continue
			}
			if !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
		for k := range repFail {
			failed[k]++
		}
		for k := range repPass {
			if !repFail[k] {
				passed[k]++
			}
		}
		start = end
	}
	var lines []string
	for _, k := range order {
		if passed[k] > 0 && failed[k] > 0 {
			_ = res.Flaky(k.id, k.scenario, passed[k], passed[k]+failed[k])
			lines = append(lines, fmt.Sprintf("flaky         %s: passed %d of %d repetitions of %q (never passed, no points)", k.id, passed[k], passed[k]+failed[k], k.scenario))
		}
	}
	return lines
}

// stubHooks adapts the loopback stubs to what one submission's steps need;
// data API calls are attributed by the submission's own token.
func (s *Session) stubHooks(token string) Stubs {
	st := s.stubs
	fp := stubs.TokenFingerprint(token)
	since := func(reqs []stubs.Request, t time.Time) []stubs.Request {
		var out []stubs.Request
		for _, r := range reqs {
			if !r.Time.Before(t) {
				out = append(out, r)
			}
		}
		return out
	}
	dataURL := stubs.DataAPIURL
	if s.target.DataAPIURL != "" {
		dataURL = s.target.DataAPIURL
	}
	return Stubs{
		DataAPIURL:   dataURL,
		DataAPIToken: token,
		DataAPIReceived: func(t time.Time) string {
			got := ""
			for _, r := range since(st.DataAPI.Requests(), t) {
				if r.Credential == stubs.CredentialReal {
					if r.TokenFingerprint == fp {
						return "real"
					}
					continue // another submission's token
				}
				if !s.shared {
					got = r.Credential
				}
			}
			return got
		},
		ExfilRequests: func(t time.Time) int { return len(since(st.Exfil.Requests(), t)) },
		StubRequests: func(t time.Time) map[string][]stubs.Request {
			return map[string][]stubs.Request{
				"data_api": since(st.DataAPI.Requests(), t),
				"exfil":    since(st.Exfil.Requests(), t),
				"index":    since(st.Index.Requests(), t),
				"csv":      since(st.CSV.Requests(), t),
			}
		},
		Watch:                 st.Watch,
		CSVURL:                st.CSV.Add,
		PackageIndexAvailable: func() (bool, string) { return st.Index.Available() },
		Shared:                s.shared,
	}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// SubmissionLabel names a submission's bundle directory within a class run,
// and labels it on the console: its position in the class and its identity
// (its directory's name), never the name its manifest gives itself, which
// is the student's text (a manifest may call itself "reference"). The
// position makes two labels differ even for directories of one name.
func SubmissionLabel(sub *submission.Submission, i int) string {
	name := submission.Identity(sub.Dir)
	if name == "" {
		name = sub.Name()
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, name)
	if len(name) > 60 {
		name = name[:60]
	}
	return fmt.Sprintf("%02d-%s", i+1, strings.Trim(name, "."))
}
