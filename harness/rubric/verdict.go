package rubric

import (
	"fmt"
	"time"
)

// Verdict is the outcome of one measurement, or the aggregate of an entry.
type Verdict string

const (
	Passed       Verdict = "passed"
	Failed       Verdict = "failed"
	NotMeasured  Verdict = "not_measured"
	HarnessError Verdict = "harness_error"
	// Flaky: a scenario feeding the entry passed in some repetitions of
	// --repeat N and failed (or timed out) in others. It is never passed,
	// earns nothing and gates the run like a failure.
	Flaky Verdict = "flaky"
)

// Valid reports whether v is one of the five verdicts.
func (v Verdict) Valid() bool {
	switch v {
	case Passed, Failed, NotMeasured, HarnessError, Flaky:
		return true
	}
	return false
}

// Category says why something was not measured.
type Category string

const (
	CategoryNone                Category = ""
	CategoryUnsupportedByTarget Category = "unsupported_by_target"
	CategoryPreconditionUnmet   Category = "precondition_unmet"
	CategoryReviewerJudgment    Category = "reviewer_judgment"
	CategoryTimeout             Category = "timeout"
)

// Valid reports whether c is a known category (the empty category is valid
// only on aggregated results, never on a recorded NotMeasured outcome).
func (c Category) Valid() bool {
	switch c {
	case CategoryUnsupportedByTarget, CategoryPreconditionUnmet, CategoryReviewerJudgment, CategoryTimeout:
		return true
	}
	return false
}

// precedence orders categories when several not_measured outcomes are merged:
// the most actionable one wins.
func (c Category) precedence() int {
	switch c {
	case CategoryTimeout:
		return 4
	case CategoryPreconditionUnmet:
		return 3
	case CategoryUnsupportedByTarget:
		return 2
	case CategoryReviewerJudgment:
		return 1
	}
	return 0
}

// Outcome is one recorded measurement of one rubric entry.
type Outcome struct {
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	ID       ID        `json:"id"`
	Verdict  Verdict   `json:"verdict"`
	Category Category  `json:"category,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	// Evidence are paths relative to the report bundle root
	// (e.g. "evidence/network/probe-denied.txt").
	Evidence []string `json:"evidence,omitempty"`
	// Scenario names the scenario (or other source) that recorded it.
	Scenario string `json:"scenario,omitempty"`
}

// Validate checks an outcome's shape: a known verdict, a category (and a
// reason) exactly when not measured, a reason for every non-passing verdict.
func (o Outcome) Validate() error {
	if !o.Verdict.Valid() {
		return fmt.Errorf("rubric: outcome for %q has unknown verdict %q", o.ID, o.Verdict)
	}
	if o.Verdict == NotMeasured {
		if !o.Category.Valid() {
			return fmt.Errorf("rubric: not_measured outcome for %q needs a category, got %q", o.ID, o.Category)
		}
	} else if o.Category != CategoryNone {
		return fmt.Errorf("rubric: %s outcome for %q must not carry a category (%q)", o.Verdict, o.ID, o.Category)
	}
	if o.Verdict != Passed && o.Reason == "" {
		return fmt.Errorf("rubric: %s outcome for %q needs a reason", o.Verdict, o.ID)
	}
	return nil
}
