package report

import "github.com/osb-capstone/acceptance/harness/rubric"

// ReviewFile is the reviewer's judgement inside the bundle (written by
// harness/review). It is kept apart from report.json, whose measured content
// a review never changes; the final score is merged at render time.
const ReviewFile = "review.json"

// The final score after review is computed by the rubric (harness/rubric
// score.go, the one place scores are computed); these names keep the report's
// vocabulary for it.
type (
	Provenance    = rubric.Provenance
	Judgment      = rubric.Judgment
	Judgments     = rubric.Judgments
	Final         = rubric.Final
	FinalItem     = rubric.FinalItem
	FinalEntry    = rubric.FinalEntry
	FinalQuestion = rubric.FinalQuestion
	EntryWeight   = rubric.EntryWeight
)

const (
	ProvMeasured   = rubric.ProvMeasured
	ProvJudged     = rubric.ProvJudged
	ProvOverride   = rubric.ProvOverride
	ProvPending    = rubric.ProvPending
	ProvNone       = rubric.ProvNone
	VerdictPending = rubric.VerdictPending
)

// Items is the document's scoring table as the rubric reads it.
func (d Document) Items() []rubric.ItemInputs {
	out := make([]rubric.ItemInputs, 0, len(d.Scoring))
	for _, s := range d.Scoring {
		out = append(out, rubric.ItemInputs{Item: s.Item, Title: s.Title, Weight: s.Weight, Inputs: s.Inputs})
	}
	return out
}

// Sheet is the document as the rubric's final score reads it.
func (d Document) Sheet() rubric.Sheet {
	s := rubric.Sheet{Items: d.Items(), Target: d.TargetKind, Aborted: d.Aborted}
	for _, r := range d.AllEntries() {
		s.Rows = append(s.Rows, r.Row())
	}
	return s
}

// Row is the entry as the rubric's final score reads it.
func (r EntryRow) Row() rubric.Row {
	row := rubric.Row{ID: r.ID, Title: r.Title, Verdict: r.Verdict, Category: r.Category, Reason: r.Reason}
	for _, o := range r.Outcomes {
		row.Outcomes = append(row.Outcomes, rubric.RowOutcome{Scenario: o.Scenario, Verdict: o.Verdict, Category: o.Category, Reason: o.Reason})
	}
	return row
}

// EntryWeights is every graded entry's share of the document's scoring items
// (rubric.EntryWeights).
func EntryWeights(d Document) map[rubric.ID]EntryWeight { return rubric.EntryWeights(d.Items()) }

// AllEntries is every criterion, milestone and drill row, in report order.
func (d Document) AllEntries() []EntryRow {
	out := append([]EntryRow{}, d.Criteria...)
	out = append(out, d.Milestones...)
	return append(out, d.Drills...)
}

// Reviewable reports whether a reviewer judges the entry (rubric.Row.Reviewable).
func (r EntryRow) Reviewable() bool { return r.Row().Reviewable() }

// HasReviewerPart reports whether something recorded a reviewer_judgment
// outcome for the entry.
func (r EntryRow) HasReviewerPart() bool { return r.Row().HasReviewerPart() }

// MeasuredPart is the verdict of the entry's outcomes other than the
// reviewer-judgment ones (rubric.Row.MeasuredPart).
func (r EntryRow) MeasuredPart() (rubric.Verdict, rubric.Category, string) {
	return r.Row().MeasuredPart()
}

// ComputeFinal merges a reviewer's judgments (nil: none yet) into the
// measured document and returns the final score with its provenance
// (rubric.ComputeFinal). Loading a bundle (ReviewedFinal), rendering it
// (Scored) and reviewing call it; renderers only print the result (d.Points).
func ComputeFinal(d Document, j *Judgments) *Final { return rubric.ComputeFinal(d.Sheet(), j) }
