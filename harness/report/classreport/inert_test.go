package classreport

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
)

// hostileClass is a class of two bundles whose every reason is payload p;
// the first submission's manifest calls itself "reference", the second's is
// payload p too (its "Name given" cell), and
// their bundles are labelled by identity (core.SubmissionLabel): the
// directory "reference" and the directory "mallory".
func hostileClass(t *testing.T, p string) (dir string, bundles []string) {
	t.Helper()
	root := t.TempDir()
	for _, name := range []string{"01-reference", "02-mallory"} {
		d := reporttest.FixtureDoc(t)
		txt := reporttest.PayloadText(p)
		d.Subject, d.VerdictReason, d.Submission = "reference ("+name+")", txt, name[3:]
		if name == "02-mallory" { // the name mallory gives itself is the payload too
			d.Subject = txt + " (" + name + ")"
		}
		for _, rows := range [][]report.EntryRow{d.Criteria, d.Milestones, d.Drills} {
			for i := range rows {
				rows[i].Reason = txt
			}
		}
		b := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(b, 0o755))
		var js bytes.Buffer
		require.NoError(t, render.WriteJSON(&js, d))
		require.NoError(t, os.WriteFile(filepath.Join(b, report.JSONFile), js.Bytes(), 0o644))
		bundles = append(bundles, b)
	}
	dir = filepath.Join(root, "class")
	require.NoError(t, WriteClassSummary(dir, bundles))
	return dir, bundles
}

// The class.md sink: rendered by a real CommonMark renderer, no element,
// link or cell of a submission's; the only links go to the bundles'
// reports; the two submissions that call themselves "reference" are two
// rows, each labelled by its bundle.
func TestClassMarkdownSinkInert(t *testing.T) {
	t.Parallel()
	for name, p := range reporttest.Payloads {
		t.Run(name, func(t *testing.T) {
			dir, _ := hostileClass(t, p)
			md := string(reporttest.MustRead(t, filepath.Join(dir, ClassMarkdownFile)))
			tables := reporttest.CheckMarkdownInert(t, md, func(href string) bool {
				return href == "../01-reference/report.md" || href == "../02-mallory/report.md"
			})
			var students []string
			var reasons int
			for _, tb := range tables {
				for _, r := range tb.Rows {
					assert.LessOrEqual(t, len(r), len(tb.Head), "%q", r)
				}
				if len(tb.Head) > 0 && tb.Head[0] == "Student" {
					for _, r := range tb.Rows {
						students = append(students, r[0])
					}
				}
				if len(tb.Head) == 4 && tb.Head[2] == "Reason" {
					for _, r := range tb.Rows {
						reasons++
						assert.Equal(t, reporttest.Shown(reporttest.PayloadText(p), inert.Line), r[2], "the reason reads whole in its own cell")
					}
				}
			}
			assert.Equal(t, []string{"01-reference", "02-mallory"}, students, "labelled by identity, never by the manifest's name")
			assert.Positive(t, reasons)
		})
	}
}

// The class.html sink: html/template escapes every payload, and no
// control character reaches the page raw.
func TestClassHTMLSinkInert(t *testing.T) {
	t.Parallel()
	for name, p := range reporttest.Payloads {
		t.Run(name, func(t *testing.T) {
			dir, _ := hostileClass(t, p)
			page := string(reporttest.MustRead(t, filepath.Join(dir, ClassHTMLFile)))
			reporttest.CheckHTMLInert(t, page)
			assert.Contains(t, page, `data-name="01-reference"`)
			assert.Contains(t, page, `data-name="02-mallory"`)
		})
	}
}

// The class.csv sink: no cell a spreadsheet reads as a formula (= + - @,
// a tab or a carriage return first), no raw control character, and each
// payload kept as text.
func TestClassCSVSinkInert(t *testing.T) {
	t.Parallel()
	for name, p := range reporttest.Payloads {
		t.Run(name, func(t *testing.T) {
			dir, _ := hostileClass(t, p)
			raw := string(reporttest.MustRead(t, filepath.Join(dir, ClassCSVFile)))
			rows, err := csv.NewReader(strings.NewReader(raw)).ReadAll()
			require.NoError(t, err)
			var sawPayload bool
			for _, r := range rows {
				for _, c := range r {
					assert.Equal(t, rune(-1), reporttest.RawControl(c), "a raw control character in %q", c)
					assert.NotContains(t, c, "\n", "one line per cell")
					if c != "" {
						assert.NotContains(t, "=+-@\t\r", c[:1], "a formula: %q", c)
					}
					sawPayload = sawPayload || strings.Contains(c, reporttest.PayloadEnd)
				}
			}
			if !strings.ContainsAny(p, "\r\n") { // a reason's first line only: the rest is in the bundle
				assert.True(t, sawPayload, "the payload is kept, as text")
			}
			assert.Equal(t, "01-reference", rows[1][0])
			assert.Equal(t, "02-mallory", rows[2][0])
		})
	}
	assert.Equal(t, `'=HYPERLINK("x")`, csvText(`=HYPERLINK("x")`))
	assert.Equal(t, `'@SUM(1)`, csvText(`@SUM(1)`))
	assert.Equal(t, `'-2+3`, csvText(`-2+3`))
	assert.Equal(t, `'+1`, csvText(`+1`))
	assert.Equal(t, `a\nb`, csvText("a\nb"))
}

// class.md and class.csv of a hostile class as files to review (go test
// -run TestGoldenHostileClass -update).
func TestGoldenHostileClass(t *testing.T) {
	t.Parallel()
	dir, _ := hostileClass(t, reporttest.AllPayloads())
	for _, f := range []string{ClassMarkdownFile, ClassCSVFile} {
		reporttest.Golden(t, "hostile-"+f, reporttest.MustRead(t, filepath.Join(dir, f)))
	}
}
