package rubric

import (
	"slices"
	"strings"
)

// Overall is the run's verdict.
type Overall string

const (
	OverallPassed     Overall = "passed"
	OverallNotPassed  Overall = "not_passed"
	OverallIncomplete Overall = "incomplete"
)

// Exit codes of `acceptance run`.
const (
	ExitPassed       = 0
	ExitGradedFail   = 1
	ExitHarnessError = 2 // also usage errors (the command line's own concern)
	ExitIncomplete   = 3
)

// Summary is the evaluated run.
type Summary struct {
	Target  Target
	Verdict Overall
	// Why explains the verdict in one line.
	Why     string
	Results map[ID]Result // every graded entry (criteria, milestones, drills)
	Order   []ID          // graded entries in registry order
	Scoring []ItemScore
	Score   Score
	// Failed, Flaky, Unmeasured and Errored list the IDs behind the verdict.
	Failed         []ID
	Flaky          []ID
	SecurityFailed []ID // security criteria failed or flaky
	Unmeasured     []ID // measurable on the target but not measured
	Errored        []ID
}

// ExitCode maps the summary to the command's exit code.
func (s Summary) ExitCode() int { return ExitCode(s.Verdict, len(s.Errored) > 0) }

// ExitCode maps an overall verdict to the exit code: graded failures (1)
// outrank harness errors (2), which outrank incompleteness (3); 0 = passed.
func ExitCode(v Overall, harnessErrors bool) int {
	switch {
	case v == OverallNotPassed:
		return ExitGradedFail
	case harnessErrors:
		return ExitHarnessError
	case v == OverallIncomplete:
		return ExitIncomplete
	case v == OverallPassed:
		return ExitPassed
	}
	return ExitHarnessError
}

// Evaluate aggregates every graded entry, scores the run and decides the
// overall verdict for target.
func Evaluate(reg *Registry, target Target, outcomes []Outcome) Summary {
	s := Summary{Target: target, Results: map[ID]Result{}}
	for _, e := range reg.Graded() {
		r := Aggregate(e, target, outcomes)
		s.Results[e.ID] = r
		s.Order = append(s.Order, e.ID)
		switch r.Verdict {
		case Failed:
			s.Failed = append(s.Failed, e.ID)
			if e.Security {
				s.SecurityFailed = append(s.SecurityFailed, e.ID)
			}
		case Flaky:
			s.Flaky = append(s.Flaky, e.ID)
			if e.Security {
				s.SecurityFailed = append(s.SecurityFailed, e.ID)
			}
		case HarnessError:
			s.Errored = append(s.Errored, e.ID)
		case NotMeasured:
			if r.Category != CategoryUnsupportedByTarget && r.Category != CategoryReviewerJudgment {
				s.Unmeasured = append(s.Unmeasured, e.ID)
			}
		}
	}
	s.Scoring, s.Score = score(reg, s.Results)

	s.Verdict, s.Why = notPassed(s.Failed, s.Flaky, s.SecurityFailed)
	switch {
	case s.Verdict == OverallNotPassed:
	case len(s.Errored) > 0 || len(s.Unmeasured) > 0:
		s.Verdict = OverallIncomplete
		var parts []string
		if len(s.Errored) > 0 {
			parts = append(parts, "harness error: "+joinIDs(s.Errored))
		}
		if len(s.Unmeasured) > 0 {
			parts = append(parts, "measurable on "+string(target)+" but not measured: "+joinIDs(s.Unmeasured))
		}
		s.Why = strings.Join(parts, "; ")
	default:
		s.Verdict = OverallPassed
		s.Why = "nothing failed and everything measurable on " + string(target) + " was measured"
	}
	return s
}

// notPassed is the not_passed verdict and its reason when anything failed
// or was flaky (a flaky entry gates like a failure: it was seen failing);
// "" otherwise. Security entries are named first.
func notPassed(failed, flaky, security []ID) (Overall, string) {
	if len(failed) == 0 && len(flaky) == 0 {
		return "", ""
	}
	var parts []string
	if len(security) > 0 {
		var secF, secK []ID
		for _, id := range security {
			if slices.Contains(flaky, id) {
				secK = append(secK, id)
			} else {
				secF = append(secF, id)
			}
		}
		if len(secF) > 0 {
			parts = append(parts, "security criterion failed: "+joinIDs(secF))
		}
		if len(secK) > 0 {
			parts = append(parts, "security criterion flaky (failed in some repetitions): "+joinIDs(secK))
		}
		if extra := minus(failed, security); len(extra) > 0 {
			parts = append(parts, "also failed: "+joinIDs(extra))
		}
		if extra := minus(flaky, security); len(extra) > 0 {
			parts = append(parts, "also flaky: "+joinIDs(extra))
		}
		return OverallNotPassed, strings.Join(parts, "; ")
	}
	if len(failed) > 0 {
		parts = append(parts, "failed: "+joinIDs(failed))
	}
	if len(flaky) > 0 {
		parts = append(parts, "flaky (passed only some repetitions): "+joinIDs(flaky))
	}
	return OverallNotPassed, strings.Join(parts, "; ")
}

// NotPassedReason is the overall not_passed reason for these failed and
// flaky IDs (security ones among them named first), or "" when there are
// none; the final score after review uses it too.
func NotPassedReason(failed, flaky []ID) string {
	var sec []ID
	for _, id := range append(append([]ID{}, failed...), flaky...) {
		if slices.Contains(SecurityCriteria, id) {
			sec = append(sec, id)
		}
	}
	_, why := notPassed(failed, flaky, sec)
	return why
}

func joinIDs(ids []ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}

func minus(a, b []ID) []ID {
	var out []ID
	for _, x := range a {
		found := false
		for _, y := range b {
			if x == y {
				found = true
			}
		}
		if !found {
			out = append(out, x)
		}
	}
	return out
}
