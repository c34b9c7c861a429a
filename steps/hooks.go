package steps

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cucumber/godog"

	"github.com/osb-capstone/acceptance/harness/blame"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// InitializeScenario installs the hooks and every step of the suite.
func (e *Env) InitializeScenario(sc *godog.ScenarioContext) {
	sc.Before(func(ctx context.Context, p *godog.Scenario) (context.Context, error) {
		var tags []string
		for _, t := range p.Tags {
			tags = append(tags, t.Name)
		}
		s := &scenario{env: e, name: p.Name, tags: tags, ids: rubricIDs(tags)}
		// An interrupted run (SIGINT/SIGTERM cancels godog's default context)
		// still walks every remaining scenario; none of them can measure anything.
		s.interruptedBeforeStart = ctx.Err() != nil
		e.plantMarkers(ctx)
		return context.WithValue(ctx, scenarioKey{}, s), nil
	})
	sc.After(func(ctx context.Context, p *godog.Scenario, err error) (context.Context, error) {
		s, _ := ctx.Value(scenarioKey{}).(*scenario)
		if s == nil {
			return ctx, nil
		}
		s.runCleanups(context.WithoutCancel(ctx))
		e.scanRunsOf(s)
		e.scanSandboxesOf(context.WithoutCancel(ctx), s)
		e.checkEgressOf(ctx, s)
		if err == nil && ctx.Err() == nil {
			// What the runs did decides whether a pass stands (blame.PassStands).
			x := e.exerciseOf(context.WithoutCancel(ctx), s)
			s.mu.Lock()
			s.exercised = x
			s.mu.Unlock()
		}
		e.recordOutcome(s, err, ctx.Err())
		return ctx, nil
	})
	registerSteps(sc) // godog records each step where its register…Steps function names it
}

// recordOutcome turns a finished scenario into one outcome per rubric ID it is
// tagged with: a failed step fails them (blame, decided per entry: a harness
// fault is a harness error, and an entry that fails only on a violated
// property — the security criteria, M3, D1, D4 — is not measured where the
// submission failed otherwise, while the scenario's other entries fail), a
// timeout fails them with the reason (a timeout never earns points), a
// not-measured step records its category and reason, and a scenario whose
// steps all passed passes them, each entry whose central property its
// subject runs exercised (blame.PassStands; the others are not measured
// with the reason). When the run was interrupted (runErr, the
// run context's error), a scenario that did not start or whose step failed is
// not measured: the interrupt is never blamed on the subject.
func (e *Env) recordOutcome(s *scenario, err, runErr error) {
	s.mu.Lock()
	nm := s.notMeasured
	x := s.exercised
	evidence := append([]string(nil), s.evidence...)
	notes := strings.Join(s.notes, "; ")
	s.mu.Unlock()

	o := rubric.Outcome{Scenario: s.name, Evidence: evidence}
	switch {
	case runErr != nil && s.interruptedBeforeStart:
		o.Verdict = rubric.NotMeasured
		o.Category = rubric.CategoryPreconditionUnmet
		o.Reason = "the run was interrupted before this scenario started"
	case runErr != nil && err != nil && !errors.Is(err, godog.ErrSkip):
		o.Verdict = rubric.NotMeasured
		o.Category = rubric.CategoryPreconditionUnmet
		o.Reason = "the run was interrupted while this scenario ran (" + err.Error() + ")"
	case err != nil && !errors.Is(err, godog.ErrSkip):
		e.recordBlamed(s, o, err)
		return
	case nm != nil:
		o.Verdict = rubric.NotMeasured
		o.Category = rubric.Category(nm.Category)
		o.Reason = nm.Reason
	case err != nil: // a bare skip without our reason
		o.Verdict = rubric.NotMeasured
		o.Category = rubric.CategoryPreconditionUnmet
		o.Reason = "a step was skipped without a recorded reason: " + err.Error()
	default:
		o.Reason = notes
		e.recordPerEntry(s, o, func(id string) (rubric.Verdict, rubric.Category, string) {
			if ok, v, cat, reason := blame.PassStands(id, x); !ok {
				return v, cat, reason
			}
			return rubric.Passed, rubric.CategoryNone, notes
		})
		return
	}
	e.recordFor(s, s.tags, s.ids, o)
}

// recordBlamed records a failed scenario's outcome entry by entry (blame):
// the entries that get the same verdict, category and reason share one
// outcome.
func (e *Env) recordBlamed(s *scenario, o rubric.Outcome, err error) {
	e.recordPerEntry(s, o, func(id string) (rubric.Verdict, rubric.Category, string) {
		return blame.Verdict(s.ids, id, err)
	})
}

// recordPerEntry records o for each entry of the scenario with the verdict,
// category and reason decide gives that entry: the entries that get the
// same share one outcome.
func (e *Env) recordPerEntry(s *scenario, o rubric.Outcome, decide func(id string) (rubric.Verdict, rubric.Category, string)) {
	type group struct {
		o         rubric.Outcome
		tags, ids []string
	}
	var groups []*group
	for _, tag := range s.tags {
		ids := rubricIDs([]string{tag})
		if len(ids) == 0 {
			continue // not a rubric tag (@fault, @agent)
		}
		oo := o
		oo.Verdict, oo.Category, oo.Reason = decide(ids[0])
		var g *group
		for _, x := range groups {
			if x.o.Verdict == oo.Verdict && x.o.Category == oo.Category && x.o.Reason == oo.Reason {
				g = x
				break
			}
		}
		if g == nil {
			g = &group{o: oo}
			groups = append(groups, g)
		}
		g.tags = append(g.tags, tag)
		if !slices.Contains(g.ids, ids[0]) {
			g.ids = append(g.ids, ids[0])
		}
	}
	for _, g := range groups {
		e.recordFor(s, g.tags, g.ids, g.o)
	}
}

// recordFor records o for the entries named by tags (ids, for the console).
// A measured verdict of a scenario whose fault the harness made up (not the
// target's own doing: drill.provenance) says so in its reason.
func (e *Env) recordFor(s *scenario, tags, ids []string, o rubric.Outcome) {
	if p := s.faultProvenance(); p != "" && (o.Verdict == rubric.Passed || o.Verdict == rubric.Failed) {
		if o.Reason == "" {
			o.Reason = p
		} else {
			o.Reason += "; " + p
		}
	}
	o.Reason = printable(o.Reason)
	if _, rerr := e.opt.Results.RecordTags(tags, o); rerr != nil {
		e.progress("  ! could not record %s: %v", s.name, rerr)
	}
	e.progress("%-13s %s  [%s]%s", string(o.Verdict), s.name, strings.Join(ids, ", "), graderText(reasonSuffix(o)))
}

func reasonSuffix(o rubric.Outcome) string {
	if o.Verdict == rubric.Passed || o.Reason == "" {
		return ""
	}
	r := o.Reason
	if len(r) > 160 {
		cut := 157
		for cut > 0 && !utf8.RuneStart(r[cut]) {
			cut-- // never split a character: the console line stays valid UTF-8
		}
		r = r[:cut] + "..."
	}
	return "\n              " + consoleText(r) // one line: the reason may quote the subject
}
