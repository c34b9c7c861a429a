package report

import (
	"strings"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// The one verdict-to-words table of every renderer (report.md, report.html,
// results.json, the class summary): what each verdict, overall verdict and
// provenance is called, and its CSS class.

// verdictWord is what an entry's verdict is called.
var verdictWord = map[rubric.Verdict]string{
	rubric.Passed:       "passed",
	rubric.Failed:       "failed",
	rubric.Flaky:        "flaky",
	rubric.HarnessError: "harness error",
	rubric.NotMeasured:  "not measured",
	VerdictPending:      "awaiting a reviewer",
}

// verdictCSS is an entry verdict's class in report.html and class.html.
var verdictCSS = map[rubric.Verdict]string{
	rubric.Passed:       "pass",
	rubric.Failed:       "fail",
	rubric.Flaky:        "flaky",
	rubric.HarnessError: "error",
	VerdictPending:      "pending",
}

// overallWord is what a run's overall verdict is called in titles.
var overallWord = map[rubric.Overall]string{
	rubric.OverallPassed:     "PASSED",
	rubric.OverallNotPassed:  "NOT PASSED",
	rubric.OverallIncomplete: "INCOMPLETE",
}

// provenanceWord says where an entry's points come from.
var provenanceWord = map[Provenance]string{
	ProvMeasured: "measured by the harness",
	ProvJudged:   "judged by a reviewer",
	ProvOverride: "reviewer override",
	ProvPending:  "awaiting a reviewer",
}

func verdictTitle(v rubric.Overall) string {
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

func verdictClass(v rubric.Verdict) string {
	if c, ok := verdictCSS[v]; ok {
		return c
	}
	return "nm"
}

func provenanceWords(p Provenance) string {
	if w, ok := provenanceWord[p]; ok {
		return w
	}
	return "not measured, no points"
}
