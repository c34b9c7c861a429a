package classreport

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
)

// classShotDir keeps the class page's screenshots (beside report.html's).
var classShotDir = filepath.Join("..", "..", "..", "reports", "html-test")

// writeReportHTML renders a bundle's report.html from its report.json (the
// stored class fixtures keep report.json only).
func writeReportHTML(t *testing.T, dir string) {
	t.Helper()
	d, err := report.ReadDocument(dir)
	require.NoError(t, err)
	f, err := os.Create(filepath.Join(dir, report.HTMLFile))
	require.NoError(t, err)
	require.NoError(t, render.WriteHTML(f, report.Scored(d)))
	require.NoError(t, f.Close())
}

// TestClassHTMLInChromium opens class.html in headless Chromium for the
// fixture class (alice with a failed security criterion and a flaky drill,
// bob reviewed, carol) and checks what it drew against the bundles
// (reporttest.CheckClassPage): histogram, map cells and links, most-failed
// list, sorting, filters, and that a failed cell's link opens the right
// report at the right entry. Screenshots: reports/html-test/class-fixture.png.
func TestClassHTMLInChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("browser test: slow tier")
	}
	bin := reporttest.FindChromium(t)
	root, bundles := classFixture(t)
	bundles = bundles[:3] // dave has no report.json: the page lists him unreadable (TestClassSummaryGolden)
	require.NoError(t, os.WriteFile(filepath.Join(bundles[1], report.ReviewFile),
		[]byte(`{"reviewer":"r","entries":{"cost":{"verdict":"passed","points":7.5}},"questions":{}}`), 0o644))
	for _, b := range bundles {
		writeReportHTML(t, b)
	}
	require.NoError(t, WriteClassSummary(root, bundles))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ids := reporttest.CheckClassPage(ctx, t, bin, root, bundles, classShotDir, "class-fixture")
	require.Equal(t, []string{"network", "D2"}, ids, "alice's failed network criterion and flaky D2")
}
