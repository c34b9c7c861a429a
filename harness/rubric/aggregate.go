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
			res.Reason = e.Targets[target].Reason
			if res.Reason == "" {
				res.Reason = "not measurable on target " + string(target)
			}
		default:
			res.Reason = NoScenarioReason
		}
		return res
	}

	by := map[Verdict][]Outcome{}
	for _, o := range mine {
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
		res.Verdict = Failed
		res.Reason = joinReasons(by[Failed])
	case len(by[HarnessError]) > 0:
		res.Verdict = HarnessError
		res.Reason = joinReasons(by[HarnessError])
	case len(timeouts) > 0:
		res.Verdict = NotMeasured
		res.Category = CategoryTimeout
		res.Reason = joinReasons(timeouts)
	case len(by[Passed]) > 0:
		res.Verdict = Passed
		res.Reason = joinReasons(by[Passed])
		if len(otherNM) > 0 {
			res.Reason = joinNonEmpty(res.Reason, "partly not measured: "+joinReasons(otherNM))
		}
	default:
		res.Verdict = NotMeasured
		res.Reason = joinReasons(otherNM)
		for _, o := range otherNM {
			if o.Category.precedence() > res.Category.precedence() {
				res.Category = o.Category
			}
		}
	}
	return res
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
