package review

import (
	"fmt"
	"github.com/osb-capstone/acceptance/harness/inert"
	"io"
	"os"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/report"
	_ "github.com/osb-capstone/acceptance/harness/report/render" // registers the bundle's renderers
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Hook merges a bundle's review.json into a render (report.Options.Review):
// `acceptance render` of a reviewed bundle keeps its final score.
func Hook(dir string, d report.Document) (*report.Final, error) {
	j, err := report.LoadJudgments(dir)
	if err != nil || j == nil {
		return nil, err
	}
	return report.ComputeFinal(d, j), nil
}

// FromFile validates an answers file against the bundle, merges it into
// review.json and re-renders the bundle. Nothing is written when the answers
// are invalid.
func FromFile(dir string, answers io.Reader, reviewer string, now time.Time) (*report.Final, error) {
	d, err := report.ReadDocument(dir)
	if err != nil {
		return nil, noReport(dir, err)
	}
	a, err := ParseAnswers(answers)
	if err != nil {
		return nil, err
	}
	if reviewer != "" {
		a.Reviewer = reviewer
	}
	j, err := Validate(d, a, now)
	if err != nil {
		return nil, err
	}
	old, err := Load(dir)
	if err != nil {
		return nil, err
	}
	merged := Merge(old, j)
	if err := Save(dir, merged); err != nil {
		return nil, err
	}
	return Render(dir, d, merged)
}

// Render re-renders the bundle with the judgments merged and returns the
// final score. report.json is left as it is.
func Render(dir string, d report.Document, j *report.Judgments) (*report.Final, error) {
	f := report.ComputeFinal(d, j)
	if _, err := report.Rerender(dir, f); err != nil {
		return f, err
	}
	return f, nil
}

func noReport(dir string, err error) error {
	if os.IsNotExist(unwrapAll(err)) {
		return fmt.Errorf("%s has no report.json (a run killed before its report? `acceptance render %s` writes it from results.jsonl): %w", dir, dir, err)
	}
	return err
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		next := u.Unwrap()
		if next == nil {
			return err
		}
		err = next
	}
}

// WriteSummary prints the final score with the provenance of every point.
func WriteSummary(w io.Writer, f *report.Final) {
	fmt.Fprintf(w, "final score: %s of %s (measured by the harness %s, judged by the reviewer %s", rubric.Num(f.Score),
		rubric.Num(f.Total), rubric.Num(f.MeasuredPoints), rubric.Num(f.JudgedPoints))
	if f.OverridePoints > 0 {
		fmt.Fprintf(w, ", reviewer overrides %s", rubric.Num(f.OverridePoints))
	}
	fmt.Fprintf(w, ")\nfinal verdict: %s: %s\n", f.Verdict, inert.Line(f.VerdictReason))
	for _, it := range f.Items {
		fmt.Fprintf(w, "  %-18s %6s of %d\n", it.Item, rubric.Num(it.Points), it.Weight)
	}
	fmt.Fprintln(w, "points by entry:")
	for _, e := range f.Entries {
		line := fmt.Sprintf("  %-16s %5s of %-5s %-8s %s", e.ID, rubric.Num(e.Points), rubric.Num(e.Weight), e.Provenance, e.Verdict)
		if e.OverrideReason != "" {
			line += fmt.Sprintf("  OVERRIDE by %s of the measured %s: %s", inert.Line(e.Reviewer), e.MeasuredVerdict, inert.Line(e.OverrideReason))
		} else if e.Reviewer != "" {
			line += " (" + inert.Line(e.Reviewer) + ")"
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	if len(f.Pending) > 0 {
		fmt.Fprintf(w, "awaiting a reviewer: %s\n", strings.Join(f.Pending, ", "))
	}
}
