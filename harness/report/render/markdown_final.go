package render

import (
	"fmt"
	"strings"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// writeFinalMarkdown renders the reviewer's final score with the provenance
// of every point (only for a reviewed bundle).
func writeFinalMarkdown(b *strings.Builder, f *report.Final) {
	fmt.Fprintf(b, "\n## Final score after review: %s of %s\n\n", rubric.Num(f.Score), rubric.Num(f.Total))
	fmt.Fprintf(b, "**Final verdict: %s**: %s\n\n", VerdictTitle(f.Verdict), Cell(f.VerdictReason))
	fmt.Fprintf(b, "Reviewer: %s. Points measured by the harness: **%s**; judged by the reviewer: **%s**",
		Cell(f.Reviewer), rubric.Num(f.MeasuredPoints), rubric.Num(f.JudgedPoints))
	if f.OverridePoints > 0 {
		fmt.Fprintf(b, "; by reviewer overrides: **%s**", rubric.Num(f.OverridePoints))
	}
	b.WriteString(".")
	if len(f.Pending) > 0 {
		fmt.Fprintf(b, " Awaiting a reviewer: %s.", Cell(strings.Join(f.Pending, ", ")))
	}
	b.WriteString(" report.json is unchanged: it holds only what the harness measured; the judgement is in review.json.\n\n")
	b.WriteString("| Entry | Weight | Points | Provenance | Verdict | Reviewer's note or override |\n|---|---:|---:|---|---|---|\n")
	for _, e := range f.Entries {
		note := Cell(e.Note)
		if e.OverrideReason != "" {
			note = "**OVERRIDE** of the measured " + string(e.MeasuredVerdict) + ": " + Cell(e.OverrideReason)
			if e.Note != "" {
				note += " (" + Cell(e.Note) + ")"
			}
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", e.ID, rubric.Num(e.Weight), rubric.Num(e.Points),
			e.Provenance, verdictWords(e.Verdict, e.Category), note)
	}
	if len(f.Questions) > 0 {
		b.WriteString("\n### Defense questions (M5)\n\n| # | Question | Verdict | Points | Note |\n|---:|---|---|---:|---|\n")
		for _, q := range f.Questions {
			fmt.Fprintf(b, "| %d | %s | %s | %s of %s | %s |\n", q.N, Cell(q.Question), verdictWords(q.Verdict, ""),
				rubric.Num(q.Points), rubric.Num(q.Weight), Cell(q.Note))
		}
	}
}
