package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/osb-capstone/acceptance/harness/blame"
	"github.com/osb-capstone/acceptance/harness/command"

	"github.com/cucumber/godog"
)

// scenarioKey finds the scenario's state in its context. State never lives in
// globals, so scenarios can run concurrently.
type scenarioKey struct{}

// scenario is what one scenario's steps share.
type scenario struct {
	env  *Env
	name string
	tags []string // the pickle's tags (feature tags included)
	ids  []string // rubric IDs among them, for progress lines

	mu          sync.Mutex
	cleanups    []func(context.Context)
	notMeasured *notMeasuredError
	evidence    []string // evidence paths, relative to the report bundle
	notes       []string
	// interruptedBeforeStart: the run was already cancelled when the scenario began.
	interruptedBeforeStart bool

	// M0 / raw-HTTP state.
	last        lastResponse
	sandboxID   string
	createBody  map[string]any
	execdBase   string
	execdHeader map[string]string
	exchanges   []string

	label string // metadata value unique to this scenario (probe sandboxes)

	// A run of one of the submission's other commands (contract, reap, tests).
	inv  *invocation
	invs []*invocation

	// Subject state.
	run   *subjectRun
	runs  []*subjectRun // consecutive runs (M1)
	probe *probeState
	drill *drill // a simulated fault for the next subject run
	// exercised: what its subject runs did, read once its steps all passed
	// (blame.PassStands decides whether each entry's pass stands).
	exercised *blame.Exercise
}

type lastResponse struct {
	what   string
	status int
	body   []byte
}

func state(ctx context.Context) *scenario {
	s, _ := ctx.Value(scenarioKey{}).(*scenario)
	if s == nil {
		panic("steps: scenario state missing from context (BeforeScenario hook not installed)")
	}
	return s
}

// notMeasuredError is returned by a step that cannot measure what it should.
// godog only knows "skipped" and drops the reason, so the scenario keeps it and
// the outcome recorder reports it with its category.
type notMeasuredError struct {
	Category string // unsupported_by_target | precondition_unmet | reviewer_judgment | timeout
	Reason   string
}

func (e *notMeasuredError) Error() string { return "not measured (" + e.Category + "): " + e.Reason }
func (e *notMeasuredError) Unwrap() error { return godog.ErrSkip }

// notMeasured records why the scenario cannot be measured and skips its remaining steps.
func notMeasured(ctx context.Context, category, format string, args ...any) error {
	s := state(ctx)
	e := &notMeasuredError{Category: category, Reason: fmt.Sprintf(format, args...)}
	s.mu.Lock()
	if s.notMeasured == nil {
		s.notMeasured = e
	}
	s.mu.Unlock()
	return e
}

// verdict is a harness judgement's error as a step's: a not-measured one
// (command.NotMeasured) is recorded for the scenario; a note, when there is
// one and no error, is noted.
func verdict(ctx context.Context, note string, err error) error {
	var nm *command.NotMeasured
	if errors.As(err, &nm) {
		return notMeasured(ctx, nm.Category, "%s", nm.Reason)
	}
	if err == nil && note != "" {
		state(ctx).note("%s", note)
	}
	return err
}

// addEvidence notes an evidence file (relative to the bundle) for this scenario's outcome.
func (s *scenario) addEvidence(paths ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range paths {
		if p != "" {
			s.evidence = append(s.evidence, p)
		}
	}
}

func (s *scenario) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// deferCleanup registers fn to run when the scenario ends, pass or fail.
func (s *scenario) deferCleanup(fn func(context.Context)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, fn)
}

func (s *scenario) runCleanups(ctx context.Context) {
	s.mu.Lock()
	fns := s.cleanups
	s.cleanups = nil
	s.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i](ctx)
	}
}

// slug names the scenario's evidence files: stable across runs (baselines
// compare them by name) and unique per scenario (outline examples have their
// own names).
func (s *scenario) slug() string {
	slug := sanitize(strings.ToLower(strings.ReplaceAll(s.name, " ", "-")))
	if len(slug) > maxSlug {
		slug = strings.TrimRight(slug[:maxSlug], "-_.")
	}
	return slug
}

// maxSlug keeps evidence file names readable in the report.
const maxSlug = 60

// rubricIDs extracts the rubric IDs from tags such as @criterion:network,
// @milestone:M2 and @drill:D1.
func rubricIDs(tags []string) []string {
	seen := map[string]bool{}
	var ids []string
	for _, t := range tags {
		t = strings.TrimPrefix(t, "@")
		kind, id, ok := strings.Cut(t, ":")
		if !ok || (kind != "criterion" && kind != "milestone" && kind != "drill") || seen[id] {
			continue
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids
}
