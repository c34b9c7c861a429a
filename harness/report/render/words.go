package render

import (
	"strings"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// The one verdict-to-words table of every renderer (report.md, report.html,
// results.json) and of the class summary (harness/report/classreport):
// what each verdict, overall verdict and provenance is called, its CSS class
// and its symbol.

// verdictWord is what an entry's verdict is called.
var verdictWord = map[rubric.Verdict]string{
	rubric.Passed:         "passed",
	rubric.Failed:         "failed",
	rubric.Flaky:          "flaky",
	rubric.HarnessError:   "harness error",
	rubric.NotMeasured:    "not measured",
	report.VerdictPending: "awaiting a reviewer",
}

// verdictCSS is an entry verdict's class in report.html and class.html.
var verdictCSS = map[rubric.Verdict]string{
	rubric.Passed:         "pass",
	rubric.Failed:         "fail",
	rubric.Flaky:          "flaky",
	rubric.HarnessError:   "error",
	report.VerdictPending: "pending",
}

// overallWord is what a run's overall verdict is called in titles.
var overallWord = map[rubric.Overall]string{
	rubric.OverallPassed:     "PASSED",
	rubric.OverallNotPassed:  "NOT PASSED",
	rubric.OverallIncomplete: "INCOMPLETE",
}

// provenanceWord says where an entry's points come from.
var provenanceWord = map[report.Provenance]string{
	report.ProvMeasured: "measured by the harness",
	report.ProvJudged:   "judged by a reviewer",
	report.ProvOverride: "reviewer override",
	report.ProvPending:  "awaiting a reviewer",
}

// VerdictTitle is what a run's overall verdict is called in titles.
func VerdictTitle(v rubric.Overall) string {
	if w, ok := overallWord[v]; ok {
		return w
	}
	return strings.ToUpper(string(v))
}

// verdictWords names a verdict; a not-measured one with its category.
func verdictWords(v rubric.Verdict, c rubric.Category) string {
	w, ok := verdictWord[v]
	if !ok {
		return string(v)
	}
	if v == rubric.NotMeasured && c != "" {
		return w + " (" + string(c) + ")"
	}
	return w
}

// verdictCell is verdictWords in a Markdown table: what did not pass, loud.
func verdictCell(v rubric.Verdict, c rubric.Category) string {
	switch v {
	case rubric.Failed, rubric.Flaky, rubric.HarnessError:
		return "**" + strings.ToUpper(verdictWords(v, c)) + "**"
	}
	return verdictWords(v, c)
}

// VerdictClass is an entry verdict's CSS class in report.html and class.html.
func VerdictClass(v rubric.Verdict) string {
	if c, ok := verdictCSS[v]; ok {
		return c
	}
	return "nm"
}

func provenanceWords(p report.Provenance) string {
	if w, ok := provenanceWord[p]; ok {
		return w
	}
	return "not measured, no points"
}

// verdictSymbol is an entry verdict's symbol in class.html's map (the colour
// says the same; the symbol survives printing in black and white).
var verdictSymbol = map[rubric.Verdict]string{
	rubric.Passed:       "✓",
	rubric.Failed:       "✗",
	rubric.Flaky:        "≈",
	rubric.HarnessError: "!",
}

// VerdictMark is a verdict's symbol in class.html's map ("–" when not measured).
func VerdictMark(v rubric.Verdict) string {
	if m, ok := verdictSymbol[v]; ok {
		return m
	}
	return "–"
}
