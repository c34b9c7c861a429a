package rubric

import (
	"fmt"
	"sort"
	"strings"
)

// ID is a stable rubric identifier: "network", "M3", "D1", "security".
type ID string

// Kind is the family an entry belongs to.
type Kind string

const (
	KindCriterion Kind = "criterion"
	KindMilestone Kind = "milestone"
	KindDrill     Kind = "drill"
	KindScoring   Kind = "scoring"
)

// Target names what the suite runs against.
type Target string

const (
	// TargetMock is the bundled server (with its audit trail and admin API).
	TargetMock Target = "mock"
	// TargetReal is a real OpenSandbox server reached by URL.
	TargetReal Target = "real"
)

// Targets lists every target, in report order.
var Targets = []Target{TargetMock, TargetReal}

// Support says whether a target can measure an entry, and why not.
type Support struct {
	Measurable bool   `json:"measurable"`
	Reason     string `json:"reason,omitempty"` // why not, or what limits it
}

// Entry is one rubric entry.
type Entry struct {
	ID    ID
	Kind  Kind
	Title string // the course's own wording of the dimension / milestone / drill
	// Statement is the MUST-style requirement the harness checks.
	Statement string
	// Evidence lists what must be on file for the entry to be judged.
	Evidence []string
	// Targets says which targets can measure it.
	Targets map[Target]Support
	// Security marks the criteria that gate the overall verdict.
	Security bool
	// ReviewerJudgment, when non-empty, says which part is left to a human
	// reviewer. If the entry is also measurable on no target it needs no
	// feature; with no outcome it aggregates to not_measured/reviewer_judgment.
	ReviewerJudgment string
	// ReviewGuide, when non-empty, makes the entry reviewer-judged (Registry.ReviewerJudged,
	// the final score after review) and says in one line what a good answer covers.
	ReviewGuide string
	// FailOnlyOnViolation: a scenario fails the entry only on a violated
	// property it measures (the security criteria, M3, D1, D4); any other
	// failure of the submission in such a scenario leaves the entry not
	// measured there and fails the scenario's other entries (package doc).
	//
	// FailOnlyOnViolation and DependsOn are left out of Hash, as they were
	// while they were tables beside the entries: a bundle graded before they
	// moved here names the same rubric as one graded after.
	FailOnlyOnViolation bool `json:"-"`
	// DependsOn lists the components of a real target's stack, besides its
	// control plane, that the entry's verdict rests on (components.go); empty,
	// not nil, for an entry measured through the lifecycle API, on the host or
	// by a reviewer. Criteria, milestones and drills only.
	DependsOn []Component `json:"-"`

	// Scoring items only.
	Weight int
	Inputs []ID
}

// Tag is the feature-file tag that feeds this entry ("" for scoring items).
func (e Entry) Tag() string {
	if e.Kind == KindScoring {
		return ""
	}
	return "@" + string(e.Kind) + ":" + string(e.ID)
}

// MeasurableOn reports whether target t can measure the entry.
func (e Entry) MeasurableOn(t Target) bool { return e.Targets[t].Measurable }

// MeasurableAnywhere reports whether some target can measure the entry.
func (e Entry) MeasurableAnywhere() bool {
	for _, s := range e.Targets {
		if s.Measurable {
			return true
		}
	}
	return false
}

// NeedsFeature reports whether the registry check demands a feature tagged
// with this entry: every criterion, milestone and drill that some target can
// measure.
func (e Entry) NeedsFeature() bool {
	return e.Kind != KindScoring && e.MeasurableAnywhere()
}

// Registry is the ordered, immutable set of rubric entries.
type Registry struct {
	order []ID
	byID  map[ID]Entry
}

// NewRegistry builds a registry; IDs must be unique and non-empty.
func NewRegistry(entries ...Entry) (*Registry, error) {
	r := &Registry{byID: make(map[ID]Entry, len(entries))}
	for _, e := range entries {
		if e.ID == "" {
			return nil, fmt.Errorf("rubric: entry with empty ID")
		}
		if _, dup := r.byID[e.ID]; dup {
			return nil, fmt.Errorf("rubric: duplicate ID %q", e.ID)
		}
		r.byID[e.ID] = e
		r.order = append(r.order, e.ID)
	}
	return r, nil
}

// MustRegistry is NewRegistry that panics; for package-level tables only.
func MustRegistry(entries ...Entry) *Registry {
	r, err := NewRegistry(entries...)
	if err != nil {
		panic(err)
	}
	return r
}

// Get returns the entry with this ID.
func (r *Registry) Get(id ID) (Entry, bool) {
	e, ok := r.byID[id]
	return e, ok
}

// All returns every entry in registry order.
func (r *Registry) All() []Entry {
	out := make([]Entry, 0, len(r.order))
	for _, id := range r.order {
		out = append(out, r.byID[id])
	}
	return out
}

// OfKind returns the entries of one kind, in registry order.
func (r *Registry) OfKind(k Kind) []Entry {
	var out []Entry
	for _, id := range r.order {
		if e := r.byID[id]; e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// Graded returns criteria, milestones and drills (everything but scoring items).
func (r *Registry) Graded() []Entry {
	var out []Entry
	for _, id := range r.order {
		if e := r.byID[id]; e.Kind != KindScoring {
			out = append(out, e)
		}
	}
	return out
}

// TotalWeight sums the scoring items' weights (100 for the course rubric).
func (r *Registry) TotalWeight() int {
	t := 0
	for _, e := range r.OfKind(KindScoring) {
		t += e.Weight
	}
	return t
}

// FeedsScoring returns the scoring items an entry feeds.
func (r *Registry) FeedsScoring(id ID) []ID {
	var out []ID
	for _, s := range r.OfKind(KindScoring) {
		for _, in := range s.Inputs {
			if in == id {
				out = append(out, s.ID)
			}
		}
	}
	return out
}

// ParseTag turns "@criterion:network" (with or without "@") into its kind and
// ID. ok is false for tags that are not rubric tags (e.g. "@slow"); err is set
// for a rubric-shaped tag that names an unknown ID or the wrong kind.
func (r *Registry) ParseTag(tag string) (id ID, ok bool, err error) {
	t := strings.TrimPrefix(strings.TrimSpace(tag), "@")
	kind, name, found := strings.Cut(t, ":")
	if !found {
		return "", false, nil
	}
	switch Kind(kind) {
	case KindCriterion, KindMilestone, KindDrill:
	case KindScoring:
		return "", true, fmt.Errorf("rubric: tag %q: scoring items are fed through their inputs, not tagged", tag)
	default:
		return "", false, nil
	}
	e, known := r.byID[ID(name)]
	if !known {
		return "", true, fmt.Errorf("rubric: tag %q names unknown ID %q", tag, name)
	}
	if e.Kind != Kind(kind) {
		return "", true, fmt.Errorf("rubric: tag %q: %q is a %s, not a %s", tag, name, e.Kind, kind)
	}
	return e.ID, true, nil
}

// IDsFromTags maps a scenario's tags to the rubric IDs they feed (sorted,
// deduplicated). Non-rubric tags are ignored; a bad rubric tag is an error.
func (r *Registry) IDsFromTags(tags []string) ([]ID, error) {
	seen := map[ID]bool{}
	var out []ID
	var errs []string
	for _, tag := range tags {
		id, ok, err := r.ParseTag(tag)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if ok && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return r.index(out[i]) < r.index(out[j]) })
	if len(errs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return out, nil
}

func (r *Registry) index(id ID) int {
	for i, x := range r.order {
		if x == id {
			return i
		}
	}
	return len(r.order)
}
