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

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// classFixture lays out three readable bundles and a broken one beside a
// summary directory: alice (the golden fixture document, not passed), bob and
// carol (two real M0+M5 runs), dave (no report.json).
func classFixture(t *testing.T) (root string, bundles []string) {
	root = t.TempDir()
	alice := filepath.Join(root, "alice")
	require.NoError(t, os.MkdirAll(alice, 0o755))
	var b bytes.Buffer
	require.NoError(t, render.WriteJSON(&b, reporttest.FixtureDoc(t)))
	require.NoError(t, os.WriteFile(filepath.Join(alice, report.JSONFile), b.Bytes(), 0o644))
	for name, src := range map[string]string{"bob": "../testdata/bundles/m0m5-a", "carol": "../testdata/bundles/m0m5-c"} {
		require.NoError(t, os.Rename(reporttest.CopyBundle(t, src), filepath.Join(root, name)))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(root, "dave"), 0o755))
	for _, n := range []string{"alice", "bob", "carol", "dave"} {
		bundles = append(bundles, filepath.Join(root, n))
	}
	return root, bundles
}

func TestClassSummaryGolden(t *testing.T) {
	t.Parallel()
	root, bundles := classFixture(t)
	dir := filepath.Join(root, "class")
	require.NoError(t, WriteClassSummary(dir, bundles))
	for _, f := range []string{ClassMarkdownFile, ClassCSVFile, ClassHTMLFile} {
		reporttest.Golden(t, f, reporttest.MustRead(t, filepath.Join(dir, f)))
	}
}

// TestClassSummaryNumbersEqualBundles: every number in class.csv is the
// bundle's own, and the pass rates add up from the bundles' verdicts.
func TestClassSummaryNumbersEqualBundles(t *testing.T) {
	t.Parallel()
	root, bundles := classFixture(t)
	dir := filepath.Join(root, "class")
	require.NoError(t, WriteClassSummary(dir, bundles))
	rows, err := csv.NewReader(bytes.NewReader(reporttest.MustRead(t, filepath.Join(dir, ClassCSVFile)))).ReadAll()
	require.NoError(t, err)
	head := rows[0]
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	rows, footer := splitClassCSV(rows)
	require.Len(t, rows, 5)
	assert.Equal(t, "(class) min", footer[0][0])
	passed := map[rubric.ID]int{}
	measured := map[rubric.ID]int{}
	flaky := map[rubric.ID]int{}
	for i, b := range bundles {
		row := rows[i+1]
		assert.Equal(t, filepath.Base(b), row[col["student"]])
		d, err := report.ReadDocument(b)
		if err != nil {
			assert.Equal(t, "unreadable", row[col["verdict"]])
			assert.Contains(t, row[col["error"]], "report.json")
			continue
		}
		assert.Equal(t, string(d.Verdict), row[col["verdict"]])
		assert.Equal(t, rubric.Num(d.Score.Earned), row[col["score_earned"]])
		assert.Equal(t, rubric.Num(d.Score.Measured), row[col["score_measured"]])
		for _, it := range d.Scoring {
			assert.Equal(t, rubric.Num(it.Earned), row[col[string(it.Item)+"_earned"]], it.Item)
		}
		for _, r := range d.AllEntries() {
			assert.Equal(t, string(r.Verdict), row[col[string(r.ID)]])
			if r.Verdict == rubric.Passed {
				passed[r.ID]++
			}
			if r.Verdict == rubric.Passed || r.Verdict == rubric.Failed || r.Verdict == rubric.Flaky {
				measured[r.ID]++
			}
			if r.Verdict == rubric.Flaky {
				flaky[r.ID]++
			}
		}
	}
	c := ReadClass(dir, bundles)
	assert.Equal(t, 1, c.Broken)
	for _, e := range c.Entries {
		assert.Equal(t, passed[e.ID], e.Passed, e.ID)
		assert.Equal(t, measured[e.ID], e.Measured, e.ID)
		assert.Equal(t, flaky[e.ID], e.Flaky, e.ID)
	}
	assert.Equal(t, 1, flaky[rubric.D2], "alice's D2 is flaky")
	assert.Equal(t, 1, c.WithFlaky)
	md := string(reporttest.MustRead(t, filepath.Join(dir, ClassMarkdownFile)))
	assert.Contains(t, md, "| network | failed | "+render.Cell("exfil.invalid resolved and was reached"))
	assert.True(t, strings.Contains(md, "| **isolation** "+render.Cell("Isolation: cannot be accessed after sandbox is destroyed")+" | 3 | 0 | 0 | 0 | 0 | 100% |"), md)
	// Flaky is counted apart, measured and never a pass.
	assert.True(t, strings.Contains(md, "| **D2** Drill 2 · Disappearance in the sandbox | 0 | 0 | 1 | 2 | 0 | 0% |"), md)
	assert.Contains(t, md, "| D2 | flaky | "+render.Cell("flaky: passed 1 of 2 repetitions"))
	assert.Contains(t, md, "1 with a flaky entry")
}

func TestClassSummaryShowsReviewedFinal(t *testing.T) {
	t.Parallel()
	root, bundles := classFixture(t)
	require.NoError(t, os.WriteFile(filepath.Join(bundles[1], report.ReviewFile),
		[]byte(`{"reviewer":"r","entries":{"cost":{"verdict":"passed","points":7.5}},"questions":{}}`), 0o644))
	c := ReadClass(filepath.Join(root, "class"), bundles)
	require.NotNil(t, c.Students[1].Final)
	assert.Equal(t, 21.5, c.Students[1].Final.Score, "14 measured + 7.5 judged")
	assert.False(t, c.Students[1].Final.Complete, "M5 and the questions still await the reviewer")
}

// After a review of one of its bundles the class summary is re-written over
// the same bundles and shows that bundle's final score; a bundle the summary
// does not list, or a directory without one, is left alone.
func TestRefreshClassSummaryAfterReview(t *testing.T) {
	t.Parallel()
	root, bundles := classFixture(t)
	dir := filepath.Join(root, "class")
	require.NoError(t, WriteClassSummary(dir, bundles))
	before := string(reporttest.MustRead(t, filepath.Join(dir, ClassCSVFile)))
	require.NoError(t, os.WriteFile(filepath.Join(bundles[1], report.ReviewFile),
		[]byte(`{"reviewer":"r","entries":{"cost":{"verdict":"passed","points":7.5}},"questions":{}}`), 0o644))

	ok, err := RefreshClassSummary(dir, filepath.Join(t.TempDir(), "elsewhere"))
	require.NoError(t, err)
	assert.False(t, ok, "a bundle the summary does not list")
	ok, err = RefreshClassSummary(t.TempDir(), bundles[1])
	require.NoError(t, err)
	assert.False(t, ok, "no class summary")
	assert.Equal(t, before, string(reporttest.MustRead(t, filepath.Join(dir, ClassCSVFile))))

	ok, err = RefreshClassSummary(dir, bundles[1])
	require.NoError(t, err)
	assert.True(t, ok)
	rows, err := csv.NewReader(bytes.NewReader(reporttest.MustRead(t, filepath.Join(dir, ClassCSVFile)))).ReadAll()
	require.NoError(t, err)
	rows, _ = splitClassCSV(rows)
	require.Len(t, rows, 5, "the same four bundles")
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	assert.Equal(t, "bob", rows[2][col["student"]])
	assert.Equal(t, "21.5", rows[2][col["final_score"]])
	assert.Equal(t, "false", rows[2][col["review_complete"]])
	assert.Equal(t, "", rows[3][col["final_score"]], "carol is not reviewed")
	assert.Equal(t, "unreadable", rows[4][col["verdict"]], "dave is still listed")
	assert.Contains(t, string(reporttest.MustRead(t, filepath.Join(dir, ClassMarkdownFile))), "21.5 (review pending)")
}

// splitClassCSV parts class.csv's rows into the header and submissions, and
// the class's figures below them.
func splitClassCSV(rows [][]string) (subs, footer [][]string) {
	for _, r := range rows {
		if strings.HasPrefix(r[0], ClassCSVFooterPrefix) {
			footer = append(footer, r)
		} else {
			subs = append(subs, r)
		}
	}
	return subs, footer
}

// Reasons that differ only in ids, numbers and durations are one group; the
// others stay apart; the most-failed list is by failure rate, harness errors
// and not measured never counted as failures.
func TestClassMostFailedGroupsReasons(t *testing.T) {
	assert.Equal(t, reasonKey("sandbox 3f2a9c1d still running after 120s"), reasonKey("Sandbox 7b0e44aa still running after 95s"))
	assert.Equal(t, reasonKey("no DELETE of df1ef78c-62e4-4bf2-9454-60f9539d6096 was seen"), reasonKey("no DELETE of 8003e3e1-bcdb-4855-a3fe-a5ce3242a8d2 was seen"))
	assert.NotEqual(t, reasonKey("sandbox 3f2a9c1d still running"), reasonKey("sandbox 3f2a9c1d was never created"))
	assert.Equal(t, "the facade stayed up; m0 <n> of <n>", reasonKey("the facade  stayed up; M0 3 of 5"), "words and entry ids are kept")

	doc := func(verdicts map[rubric.ID]rubric.Verdict, reasons map[rubric.ID]string, score float64) report.Document {
		d := report.Document{Verdict: rubric.OverallNotPassed, Score: rubric.Score{Earned: score, Total: 100}}
		for _, id := range []rubric.ID{rubric.Network, rubric.M0, rubric.D2} {
			v := verdicts[id]
			if v == "" {
				v = rubric.Passed
			}
			row := report.EntryRow{ID: id, Title: string(id), Verdict: v, Reason: reasons[id]}
			if id == rubric.Network {
				d.Criteria = append(d.Criteria, row)
			} else if id == rubric.M0 {
				d.Milestones = append(d.Milestones, row)
			} else {
				d.Drills = append(d.Drills, row)
			}
		}
		return d
	}
	c := Class{}
	add := func(name string, d report.Document) {
		c.Students = append(c.Students, ClassStudent{Name: name, Bundle: name, Doc: d})
	}
	add("a", doc(map[rubric.ID]rubric.Verdict{rubric.D2: rubric.Failed, rubric.M0: rubric.Failed},
		map[rubric.ID]string{rubric.D2: "retried the vanished sandbox 3f2a9c1d for 120s", rubric.M0: "no contract"}, 10))
	add("b", doc(map[rubric.ID]rubric.Verdict{rubric.D2: rubric.Failed},
		map[rubric.ID]string{rubric.D2: "retried the vanished sandbox 7b0e44aa for 95s"}, 55))
	add("c", doc(map[rubric.ID]rubric.Verdict{rubric.D2: rubric.Flaky, rubric.Network: rubric.HarnessError},
		map[rubric.ID]string{rubric.D2: "flaky: passed 1 of 2 repetitions"}, 100))
	add("d", doc(map[rubric.ID]rubric.Verdict{rubric.D2: rubric.NotMeasured, rubric.Network: rubric.Failed},
		map[rubric.ID]string{rubric.Network: "exfil.invalid was reached"}, 90))
	// Tally as ReadClass does, then the statistics.
	for _, id := range []rubric.ID{rubric.Network, rubric.M0, rubric.D2} {
		e := ClassEntry{ID: id, Title: string(id)}
		for _, s := range c.Students {
			r, _ := s.entry(id)
			switch r.Verdict {
			case rubric.Passed:
				e.Passed++
			case rubric.Failed:
				e.Failed++
			case rubric.Flaky:
				e.Flaky++
			case rubric.HarnessError:
				e.Errored++
			default:
				e.NotMeasured++
			}
		}
		e.Measured = e.Passed + e.Failed + e.Flaky
		c.Entries = append(c.Entries, e)
	}
	c.addStats()

	require.Len(t, c.MostFailed, 3)
	d2 := c.MostFailed[0]
	assert.Equal(t, rubric.D2, d2.ID, "D2: 3 of 3 measured (d's is not measured)")
	assert.Equal(t, 3, d2.Failed)
	assert.Equal(t, 1, d2.Flaky)
	assert.Equal(t, 3, d2.Measured)
	require.Len(t, d2.Groups, 2)
	assert.Equal(t, ReasonGroup{Reason: "retried the vanished sandbox 3f2a9c1d for 120s", Variants: 2, Count: 2, Students: []string{"a", "b"}}, d2.Groups[0])
	assert.Equal(t, []string{"c"}, d2.Groups[1].Students)
	nw := c.MostFailed[1]
	assert.Equal(t, rubric.Network, nw.ID)
	assert.True(t, nw.Security)
	assert.Equal(t, 1, nw.Failed)
	assert.Equal(t, 3, nw.Measured, "c's harness error is neither a failure nor measured")
	assert.InDelta(t, 1.0/3, nw.Rate, 1e-9)
	assert.Equal(t, rubric.M0, c.MostFailed[2].ID)
	assert.InDelta(t, 0.25, c.MostFailed[2].Rate, 1e-9)
	assert.Equal(t, 1, c.SecurityFailed, "d failed network; c's harness error is no security failure")

	require.NotNil(t, c.Dist)
	assert.Equal(t, Distribution{N: 4, Min: 10, Q1: 43.75, Median: 72.5, Q3: 92.5, Max: 100, Mean: 63.75}, *c.Dist)
	var counts []int
	for _, b := range c.Histogram {
		counts = append(counts, b.Count)
	}
	assert.Equal(t, []int{0, 1, 0, 0, 0, 1, 0, 0, 0, 2}, counts, "100 is in the last band")
}
