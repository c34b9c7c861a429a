package classreport

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
)

// calibrationClass holds the report.json of each calibration submission
// (fixtures/submissions) as `acceptance grade` graded them in one call
// (`--tags '~@large' --parallel 2`, the bundled server; see
// testdata/class-calibration/README.md): a real class of sixteen.
const calibrationClass = "testdata/class-calibration"

// calibrationBundles copies the calibration class into a class directory
// laid out as `grade` lays it out, each with the report.html its report.json
// renders.
func calibrationBundles(t *testing.T) (root string, bundles []string) {
	t.Helper()
	root = t.TempDir()
	entries, err := os.ReadDir(calibrationClass)
	require.NoError(t, err)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dst := filepath.Join(root, e.Name())
		require.NoError(t, os.MkdirAll(dst, 0o755))
		b := reporttest.MustRead(t, filepath.Join(calibrationClass, e.Name(), report.JSONFile))
		require.NoError(t, os.WriteFile(filepath.Join(dst, report.JSONFile), b, 0o644))
		writeReportHTML(t, dst)
		bundles = append(bundles, dst)
	}
	require.Len(t, bundles, 16, "the calibration set")
	return root, bundles
}

// TestClassHTMLCalibration is the class page of the calibration set, in
// Chromium, checked against its sixteen bundles (reporttest.CheckClassPage).
// Screenshots: reports/html-test/class-calibration.png and
// class-calibration-filtered.png. Its figures are docs/class.md's.
func TestClassHTMLCalibration(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: slow tier")
	}
	bin := reporttest.FindChromium(t)
	root, bundles := calibrationBundles(t)
	require.NoError(t, WriteClassSummary(root, bundles))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ids := reporttest.CheckClassPage(ctx, t, bin, root, bundles, classShotDir, "class-calibration")
	c := ReadClass(root, bundles)
	t.Logf("distribution: %s", distLine(c.Dist))
	for _, f := range c.MostFailed[:min(3, len(c.MostFailed))] {
		t.Logf("most failed: %s %s (%d of %d)", f.ID, pct(f.Rate), f.Failed, f.Measured)
	}
	require.NotEmpty(t, ids)
	_ = os.WriteFile(filepath.Join(classShotDir, "class-calibration.html"), reporttest.MustRead(t, filepath.Join(root, ClassHTMLFile)), 0o644)
}

// The calibration class's class.md, golden: its distribution, most-failed
// entries and reasons are what docs/class.md quotes.
func TestClassCalibrationGolden(t *testing.T) {
	root, bundles := calibrationBundles(t)
	require.NoError(t, WriteClassSummary(root, bundles))
	reporttest.Golden(t, "class-calibration.md", reporttest.MustRead(t, filepath.Join(root, ClassMarkdownFile)))
}
