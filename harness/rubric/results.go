package rubric

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Sink receives every outcome as it is recorded (the report bundle's journal).
// Append is called with the Results lock held, so outcomes reach a sink in
// sequence order.
type Sink interface {
	Append(Outcome) error
}

// Results collects per-ID outcomes. It is safe for concurrent use by
// scenarios running in parallel.
type Results struct {
	reg   *Registry
	now   func() time.Time
	mu    sync.Mutex
	seq   int64
	out   []Outcome
	sinks []Sink
}

// NewResults returns an empty collector for reg that forwards each outcome to
// the sinks.
func NewResults(reg *Registry, sinks ...Sink) *Results {
	return &Results{reg: reg, now: time.Now, sinks: sinks}
}

// SetClock replaces the clock used to stamp outcomes (tests).
func (r *Results) SetClock(now func() time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = now
}

// Registry returns the registry the collector validates against.
func (r *Results) Registry() *Registry { return r.reg }

// Record validates and stores an outcome, stamps Seq and (if zero) Time, and
// forwards it to the sinks. An unknown or scoring ID is rejected with an error
// and not stored. A malformed outcome (e.g. not_measured without a category)
// is stored repaired (see repair) — a measurement is never silently dropped
// and a failure never turns into something milder — and the validation error
// is returned. A sink error is
// returned, but the outcome stays recorded in memory.
func (r *Results) Record(o Outcome) error {
	e, ok := r.reg.Get(o.ID)
	if !ok {
		return fmt.Errorf("rubric: record: unknown ID %q", o.ID)
	}
	if e.Kind == KindScoring {
		return fmt.Errorf("rubric: record: %q is a scoring item; record its inputs instead", o.ID)
	}
	invalid := o.Validate()
	if invalid != nil {
		o = repair(o, invalid)
	}
	o.Evidence = append([]string(nil), o.Evidence...)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	o.Seq = r.seq
	if o.Time.IsZero() {
		o.Time = r.now().UTC()
	}
	r.out = append(r.out, o)
	var errs []error
	for _, s := range r.sinks {
		if err := s.Append(o); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append([]error{invalid}, errs...)...)
}

// Pass records a passing measurement.
func (r *Results) Pass(id ID, scenario, reason string, evidence ...string) error {
	return r.Record(Outcome{ID: id, Verdict: Passed, Scenario: scenario, Reason: reason, Evidence: evidence})
}

// Fail records a graded failure; reason states the observed value.
func (r *Results) Fail(id ID, scenario, reason string, evidence ...string) error {
	return r.Record(Outcome{ID: id, Verdict: Failed, Scenario: scenario, Reason: reason, Evidence: evidence})
}

// NotMeasured records that a check could not run; reason states the observed value.
func (r *Results) NotMeasured(id ID, scenario string, cat Category, reason string, evidence ...string) error {
	return r.Record(Outcome{ID: id, Verdict: NotMeasured, Category: cat, Scenario: scenario, Reason: reason, Evidence: evidence})
}

// Timeout records that a measurement ran out of time (never passes, never scores).
func (r *Results) Timeout(id ID, scenario, reason string, evidence ...string) error {
	return r.NotMeasured(id, scenario, CategoryTimeout, reason, evidence...)
}

// Flaky records that scenario passed in passed of reps repetitions and
// failed (or timed out) in the others; it supersedes that scenario's passed
// and failed outcomes for id (see Aggregate).
func (r *Results) Flaky(id ID, scenario string, passed, reps int, evidence ...string) error {
	reason := fmt.Sprintf("flaky: passed %d of %d repetitions", passed, reps)
	if scenario != "" {
		reason += fmt.Sprintf(" of scenario %q", scenario)
	}
	return r.Record(Outcome{ID: id, Verdict: Flaky, Scenario: scenario, Reason: reason, Evidence: evidence})
}

// HarnessError records that the harness itself failed while measuring.
func (r *Results) HarnessError(id ID, scenario, reason string, evidence ...string) error {
	return r.Record(Outcome{ID: id, Verdict: HarnessError, Scenario: scenario, Reason: reason, Evidence: evidence})
}

// RecordTags records the same verdict for every rubric ID named by a
// scenario's tags (e.g. from a godog After hook). It returns the IDs recorded.
func (r *Results) RecordTags(tags []string, o Outcome) ([]ID, error) {
	ids, err := r.reg.IDsFromTags(tags)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range ids {
		oo := o
		oo.ID = id
		if err := r.Record(oo); err != nil {
			errs = append(errs, err)
		}
	}
	return ids, errors.Join(errs...)
}

// Outcomes returns a copy of everything recorded, in sequence order.
func (r *Results) Outcomes() []Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Outcome(nil), r.out...)
}

// repair keeps a malformed outcome's meaning as far as it is known: a valid
// verdict is kept (a stray category is dropped, a missing reason is filled
// in, a not_measured without a valid category becomes precondition_unmet);
// an unknown verdict becomes harness_error. The reason says what was wrong.
func repair(o Outcome, err error) Outcome {
	note := fmt.Sprintf("[harness recorded an invalid outcome: %v]", err)
	switch o.Verdict {
	case Passed, Failed, HarnessError, Flaky:
		o.Category = CategoryNone
	case NotMeasured:
		if !o.Category.Valid() {
			o.Category = CategoryPreconditionUnmet
		}
	default:
		o.Reason = fmt.Sprintf("verdict %q, category %q, reason %q", o.Verdict, o.Category, o.Reason)
		o.Verdict, o.Category = HarnessError, CategoryNone
	}
	if o.Reason == "" {
		o.Reason = note
	} else {
		o.Reason += " " + note
	}
	return o
}
