package rubric

import (
	"sort"
	"strings"
)

// NoScenarioReason is the reason of an entry nothing measured.
const NoScenarioReason = "no scenario measured this"

// Result is the aggregated verdict of one entry.
type Result struct {
	ID       ID       `json:"id"`
	Kind     Kind     `json:"-"`
	Verdict  Verdict  `json:"verdict"`
	Reason   string   `json:"reason"`
	Category Category `json:"category,omitempty"`
	Evidence []string `json:"evidence"`
	// Outcomes are the recorded outcomes for this ID, in sequence order.
	Outcomes []Outcome `json:"-"`
}

// Aggregate folds the outcomes of one entry into its verdict (rules in the
// package doc). Evidence is the union of the outcomes' evidence, in order.
func Aggregate(e Entry, target Target, outcomes []Outcome) Result {
	res := Result{ID: e.ID, Kind: e.Kind, Evidence: []string{}}
	var mine []Outcome
	for _, o := range outcomes {
		if o.ID == e.ID {
			mine = append(mine, o)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool { return mine[i].Seq < mine[j].Seq })
	res.Outcomes = mine
	seenEv := map[string]bool{}
	for _, o := range mine {
		for _, ev := range o.Evidence {
			if !seenEv[ev] {
				seenEv[ev] = true
				res.Evidence = append(res.Evidence, ev)
			}
		}
	}

	if len(mine) == 0 {
		res.Verdict = NotMeasured
		switch {
		case e.ReviewerJudgment != "" && !e.MeasurableAnywhere():
			res.Category = CategoryReviewerJudgment
			res.Reason = "reviewer judgment: " + e.ReviewerJudgment
		case !e.MeasurableOn(target):
			res.Category = CategoryUnsupportedByTarget
			res.Reason = targetReason(e, target)
		default:
			res.Reason = NoScenarioReason
		}
		return res
	}

	res.Verdict, res.Category, res.Reason = Fold(mine)
	if res.Verdict == NotMeasured && res.Category == CategoryPreconditionUnmet && !e.MeasurableOn(target) && e.MeasurableAnywhere() {
		// The target cannot measure the entry whatever the subject does (the
		// registry says why): an unmet precondition of some scenario (e.g. a
		// submission without a model) would not make it measurable here, so
		// the target's limit is the accurate category.
		res.Category = CategoryUnsupportedByTarget
		if res.Reason != "" {
			res.Reason = targetReason(e, target) + "; the scenarios: " + res.Reason
		} else {
			res.Reason = targetReason(e, target)
		}
	}
	return res
}

// targetReason is the registry's reason why target cannot measure e.
func targetReason(e Entry, target Target) string {
	if r := e.Targets[target].Reason; r != "" {
		return r
	}
	return "not measurable on target " + string(target)
}

// Fold folds recorded outcomes (of one entry, in sequence order, at least
// one) into a verdict, its category and reason, by the rules of the package
// doc. A flaky outcome supersedes the passed, failed and timed-out outcomes
// of its own scenario: those repetitions are what it summarises.
func Fold(mine []Outcome) (Verdict, Category, string) {
	flakyScenario := map[string]bool{}
	for _, o := range mine {
		if o.Verdict == Flaky {
			flakyScenario[o.Scenario] = true
		}
	}
	by := map[Verdict][]Outcome{}
	var whenFailed []Outcome // failures summarised by a flaky outcome
	for _, o := range mine {
		if flakyScenario[o.Scenario] && (o.Verdict == Passed || o.Verdict == Failed || o.Category == CategoryTimeout) {
			if o.Verdict != Passed {
				whenFailed = append(whenFailed, o)
			}
			continue
		}
		by[o.Verdict] = append(by[o.Verdict], o)
	}
	var timeouts, otherNM []Outcome
	for _, o := range by[NotMeasured] {
		if o.Category == CategoryTimeout {
			timeouts = append(timeouts, o)
		} else {
			otherNM = append(otherNM, o)
		}
	}
	switch {
	case len(by[Failed]) > 0:
		return Failed, CategoryNone, joinReasons(by[Failed])
	case len(by[Flaky]) > 0:
		reason := joinReasons(by[Flaky])
		if len(whenFailed) > 0 {
			reason = joinNonEmpty(reason, "when it failed: "+joinReasons(whenFailed))
		}
		return Flaky, CategoryNone, reason
	case len(by[HarnessError]) > 0:
		return HarnessError, CategoryNone, joinReasons(by[HarnessError])
	case len(timeouts) > 0:
		return NotMeasured, CategoryTimeout, joinReasons(timeouts)
	case len(by[Passed]) > 0:
		reason := joinReasons(by[Passed])
		if len(otherNM) > 0 {
			reason = joinNonEmpty(reason, "partly not measured: "+joinReasons(otherNM))
		}
		return Passed, CategoryNone, reason
	}
	cat := CategoryNone
	for _, o := range otherNM {
		if o.Category.precedence() > cat.precedence() {
			cat = o.Category
		}
	}
	return NotMeasured, cat, joinReasons(otherNM)
}

func joinReasons(os []Outcome) string {
	seen := map[string]bool{}
	var parts []string
	for _, o := range os {
		r := strings.TrimSpace(o.Reason)
		if r == "" || seen[r] {
			continue
		}
		seen[r] = true
		parts = append(parts, r)
	}
	return strings.Join(parts, "; ")
}

func joinNonEmpty(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
