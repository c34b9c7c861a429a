package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// hostileDoc is the fixture document with payload p in everything a
// submission controls: every row's reason, evidence file name and
// reproduce line, the subject, the verdict's reason, the run's abort note,
// a drift's detail and diff, and a reviewer's note and override (quoting
// it).
func hostileDoc(t *testing.T, p string) report.Document {
	t.Helper()
	d := reporttest.FixtureDoc(t)
	txt := reporttest.PayloadText(p)
	d.Subject, d.VerdictReason, d.Aborted = txt, txt, txt
	for _, rows := range [][]report.EntryRow{d.Criteria, d.Milestones, d.Drills} {
		for i := range rows {
			rows[i].Reason = txt
			rows[i].Evidence = []string{"evidence/" + string(rows[i].ID) + "/" + txt}
			rows[i].Reproduce = txt
		}
	}
	for i := range d.Drift {
		d.Drift[i].Detail, d.Drift[i].Diff = txt, "```\n"+txt+"\n```"
	}
	d.Final = report.ComputeFinal(d, &report.Judgments{Reviewer: txt,
		Entries: map[rubric.ID]report.Judgment{
			rubric.Cost:    {Verdict: rubric.Passed, Points: 6, Note: txt},
			rubric.Network: {Verdict: rubric.Passed, Points: 4.17, OverrideReason: txt},
		}})
	return report.Scored(d)
}

// shownCell is how a payload reads in a Markdown cell once rendered: each
// line made inert (harness/inert), the lines kept.
func shownCell(s string) string { return reporttest.Shown(s, inert.Line) }

// shownCode is how a command line reads in the Reproduce cell: one line.
func shownCode(s string) string {
	return inert.Line(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s))
}

// evidenceLink is the only kind of link report.md may hold: the bundle's
// own evidence files, a relative path with no scheme.
func evidenceLink(href string) bool {
	return strings.HasPrefix(href, "evidence/") && !strings.Contains(strings.SplitN(href, "/", 3)[1], ":")
}

// The report.md sink: for every payload class, rendered by a real
// CommonMark renderer (goldmark with GitHub's tables and autolinks, raw
// HTML passed through), report.md holds no element the grader did not
// make, no link but the evidence links, no extra or split table cell, and
// each payload reads whole, as text, in its own cell.
func TestMarkdownSinkInert(t *testing.T) {
	t.Parallel()
	for name, p := range reporttest.Payloads {
		t.Run(name, func(t *testing.T) {
			d := hostileDoc(t, p)
			var b strings.Builder
			require.NoError(t, WriteMarkdown(&b, d))
			tables := reporttest.CheckMarkdownInert(t, b.String(), evidenceLink)
			txt := reporttest.PayloadText(p)
			var entryRows int
			for _, tb := range tables {
				for _, r := range tb.Rows {
					assert.LessOrEqual(t, len(r), len(tb.Head), "a row with more cells than its header: %q", r)
				}
				if len(tb.Head) == 5 && tb.Head[2] == "Reason" {
					for _, r := range tb.Rows {
						require.Len(t, r, 5, "%q", r)
						entryRows++
						assert.Equal(t, shownCell(txt), r[2], "the reason reads whole in its own cell")
						assert.Equal(t, inert.Line(path.Base(txt)), r[3], "the evidence link's text")
						assert.Equal(t, shownCode(txt), r[4], "the reproduce line reads whole in its own cell")
					}
				}
			}
			assert.Equal(t, len(d.AllEntries()), entryRows, "every entry has its row")
		})
	}
}

// The results.json sink (Gradescope renders its output fields as
// Markdown): no link, image or HTML of the submission's in any output, and
// each payload reads whole.
func TestGradescopeSinkInert(t *testing.T) {
	t.Parallel()
	for name, p := range reporttest.Payloads {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, WriteGradescope(&b, hostileDoc(t, p)))
			var res gsResults
			require.NoError(t, json.Unmarshal(b.Bytes(), &res))
			noLink := func(string) bool { return false }
			reporttest.CheckMarkdownInert(t, res.Output, noLink)
			for _, tc := range res.Tests {
				reporttest.CheckMarkdownInert(t, tc.Output, noLink)
				assert.Contains(t, tc.Output, Cell(reporttest.PayloadText(p)), "%s: the reason, escaped", tc.Name)
			}
		})
	}
}

// The report.html sink: html/template escapes every payload; no element,
// attribute or link of the submission's, no raw control character.
func TestHTMLSinkInert(t *testing.T) {
	t.Parallel()
	for name, p := range reporttest.Payloads {
		t.Run(name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, WriteHTML(&b, hostileDoc(t, p)))
			reporttest.CheckHTMLInert(t, b.String())
		})
	}
}

// The junit.xml sink: well-formed XML whatever the payload, no raw control
// character, and each payload kept as text.
func TestJUnitSinkInert(t *testing.T) {
	t.Parallel()
	for name, p := range reporttest.Payloads {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, WriteJUnit(&b, hostileDoc(t, p)))
			out := b.String()
			assert.Equal(t, rune(-1), reporttest.RawControl(out))
			var parsed junitSuites
			require.NoError(t, xml.Unmarshal([]byte(out), &parsed))
			require.NotEmpty(t, parsed.Suites)
			assert.Contains(t, parsed.Suites[0].Cases[0].SystemOut.Text, reporttest.PayloadEnd)
		})
	}
}

// The hostile outputs as files to review: every payload class in one
// reason, subject, file name and command line (go test -run
// TestGoldenHostile -update writes them; read them before committing).
func TestGoldenHostile(t *testing.T) {
	t.Parallel()
	d := hostileDoc(t, reporttest.AllPayloads())
	var md, gs, ju bytes.Buffer
	require.NoError(t, WriteMarkdown(&md, d))
	require.NoError(t, WriteGradescope(&gs, d))
	require.NoError(t, WriteJUnit(&ju, d))
	reporttest.Golden(t, "report-hostile.md", md.Bytes())
	reporttest.Golden(t, "results-hostile.json", gs.Bytes())
	reporttest.Golden(t, "junit-hostile.xml", ju.Bytes())
	reporttest.CheckMarkdownInert(t, md.String(), evidenceLink)
}
