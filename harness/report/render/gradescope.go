package render

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Gradescope's autograder results (https://gradescope-autograders.readthedocs.io/en/latest/specs/),
// validated in tests against gradescope.schema.json, written from that page.
type gsResults struct {
	Score           float64        `json:"score"`
	ExecutionTime   int64          `json:"execution_time,omitempty"`
	Output          string         `json:"output"`
	OutputFormat    string         `json:"output_format"`
	TestOutputFmt   string         `json:"test_output_format"`
	Visibility      string         `json:"visibility"`
	StdoutVisiblity string         `json:"stdout_visibility"`
	ExtraData       map[string]any `json:"extra_data"`
	Tests           []gsTest       `json:"tests"`
}

type gsTest struct {
	Score        float64        `json:"score"`
	MaxScore     float64        `json:"max_score"`
	Status       string         `json:"status"`
	Name         string         `json:"name"`
	Number       string         `json:"number"`
	Output       string         `json:"output"`
	OutputFormat string         `json:"output_format"`
	Tags         []string       `json:"tags"`
	Visibility   string         `json:"visibility"`
	ExtraData    map[string]any `json:"extra_data"`
}

// writeGradescope renders results.json for a Gradescope autograder: one test
// per graded entry that feeds the score, max_score = the entry's weight
// (item weight / inputs; they sum to 100), score = its final points (the
// measured ones until a reviewer has judged; reviewer-judgement entries score
// 0 until then and say so). A test passes only when it earned all its points
// from a passed verdict; not-measured entries (a timeout included) score 0
// and explain why in their output and extra_data. The top-level score is the
// final score (the tests' scores, unrounded).
func writeGradescope(w io.Writer, d report.Document, f *report.Final, reviewed bool) error {
	rows := map[rubric.ID]report.EntryRow{}
	for _, r := range d.AllEntries() {
		rows[r.ID] = r
	}
	res := gsResults{OutputFormat: "md", TestOutputFmt: "md", Visibility: "visible", StdoutVisiblity: "hidden",
		Tests: []gsTest{}}
	if !d.StartedAt.IsZero() && d.EndedAt.After(d.StartedAt) {
		res.ExecutionTime = int64(d.EndedAt.Sub(d.StartedAt).Seconds())
	}
	for i, fe := range f.Entries {
		r := rows[fe.ID]
		t := gsTest{Score: fe.Points, MaxScore: fe.Weight, Status: "failed", Name: string(fe.ID) + ": " + fe.Title,
			Number: fmt.Sprint(i + 1), OutputFormat: "md", Visibility: "visible",
			Tags: []string{kindOf(d, fe.ID)}}
		for _, it := range fe.Items {
			t.Tags = append(t.Tags, "scoring:"+string(it))
		}
		t.Tags = append(t.Tags, "provenance:"+string(fe.Provenance))
		if fe.EarnedInFull() {
			t.Status = "passed"
		}
		extra := map[string]any{"verdict": string(r.Verdict), "provenance": string(fe.Provenance), "final_verdict": string(fe.Verdict)}
		if r.Category != "" {
			extra["category"] = string(r.Category)
		}
		if r.Verdict == rubric.Flaky {
			extra["flaky"] = r.Reason
		}
		if r.Verdict == rubric.NotMeasured {
			extra["not_measured"] = map[string]string{"category": string(r.Category), "reason": r.Reason}
		}
		if len(r.Evidence) > 0 {
			extra["evidence"] = r.Evidence
		}
		t.ExtraData = extra
		t.Output = gsOutput(r, fe)
		res.Tests = append(res.Tests, t)
	}
	// The exact final score: the tests' scores are rounded to 2 decimals each
	// (six shares of 25/6 show as 4.17 but add up to 25).
	res.Score = f.Score
	res.ExtraData = map[string]any{
		"max_score": f.Total, "verdict": string(f.Verdict), "verdict_reason": f.VerdictReason,
		"measured_verdict": string(d.Verdict), "measured_points": f.MeasuredPoints, "judged_points": f.JudgedPoints,
		"override_points": f.OverridePoints, "reviewed": reviewed, "review_complete": f.Complete, "pending": f.Pending,
		"run_id": d.RunID, "target": d.Target, "subject": d.Subject, "seed": d.Seed,
	}
	if c := d.Confinement; c != nil {
		res.ExtraData["confinement_level"] = string(c.Level)
		res.ExtraData["confinement"] = map[string]any{"level": string(c.Level), "mode": c.Mode, "holds": c.Holds, "lacks": c.Lacks}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%s**, score %s of %s", VerdictTitle(f.Verdict), rubric.Num(res.Score), rubric.Num(f.Total))
	fmt.Fprintf(&b, " (measured by the harness %s, judged by a reviewer %s", rubric.Num(f.MeasuredPoints), rubric.Num(f.JudgedPoints))
	if f.OverridePoints > 0 {
		fmt.Fprintf(&b, ", reviewer overrides %s", rubric.Num(f.OverridePoints))
	}
	fmt.Fprintf(&b, "). %s", Cell(f.VerdictReason))
	if !reviewed {
		b.WriteString("\n\nNot reviewed yet: reviewer-judgement entries score 0 until `acceptance review` records a judgement.")
	}
	if c := d.Confinement; c != nil {
		fmt.Fprintf(&b, "\n\nConfinement: level %s (docs/confinement.md).", c.Level)
		if len(c.Lacks) > 0 {
			fmt.Fprintf(&b, " Not enforced at this level: %s.", Cell(strings.Join(c.Lacks, "; ")))
		}
	}
	res.Output = b.String()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(res)
}

func kindOf(d report.Document, id rubric.ID) string {
	for _, r := range d.Criteria {
		if r.ID == id {
			return "criterion"
		}
	}
	for _, r := range d.Milestones {
		if r.ID == id {
			return "milestone"
		}
	}
	return "drill"
}

func gsOutput(r report.EntryRow, fe report.FinalEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** (%s of %s points, %s)\n\n", verdictWords(fe.Verdict, r.Category), rubric.Num(fe.Points), rubric.Num(fe.Weight), provenanceWords(fe.Provenance))
	if r.Verdict == rubric.NotMeasured {
		fmt.Fprintf(&b, "Not measured (%s): ", r.Category)
		if r.Category == rubric.CategoryTimeout {
			b.WriteString("a timeout never earns points. ")
		}
	}
	if r.Verdict == rubric.Flaky {
		b.WriteString("Passed in only some of the repetitions (`--repeat`) and failed in the others: a flaky entry is never passed and earns no points. ")
	}
	if r.Reason != "" {
		b.WriteString(Cell(r.Reason)) // the submission's text, inert Markdown
		b.WriteString("\n")
	}
	if len(r.StandIns) > 0 {
		fmt.Fprintf(&b, "\n*Stand-in:* this verdict %s.\n", report.StandInNote(r.StandIns))
	}
	if fe.OverrideReason != "" {
		fmt.Fprintf(&b, "\nReviewer override (%s): %s\n", Cell(fe.Reviewer), Cell(fe.OverrideReason))
	}
	if fe.Note != "" {
		fmt.Fprintf(&b, "\nReviewer note (%s): %s\n", Cell(fe.Reviewer), Cell(fe.Note))
	}
	if len(r.Evidence) > 0 {
		b.WriteString("\nEvidence: ")
		for i, e := range r.Evidence {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(code(e))
		}
		b.WriteString("\n")
	}
	if r.Reproduce != "" {
		fmt.Fprintf(&b, "\nReproduce: %s\n", code(r.Reproduce))
	}
	return b.String()
}
