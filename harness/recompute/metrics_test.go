package recompute

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeCSV(t *testing.T, content string) *Stats {
	t.Helper()
	p := filepath.Join(t.TempDir(), "t.csv")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	st, err := File(p)
	require.NoError(t, err)
	return st
}

func TestLookupConvention(t *testing.T) {
	t.Parallel()
	st := writeCSV(t, "Unit Price,Region,qty,note\n2.5,North,1,a\n3.5,South,2,\n4,North,NA,c\n")
	cases := map[string]float64{
		"rows": 3, "columns": 4, "missing_total": 2, "missing_qty": 1, "missing_note": 1,
		"count_qty": 2, "sum_unit_price": 10, "mean_Unit Price": 10.0 / 3, "min_unit_price": 2.5, "max_unit_price": 4,
		"std_qty": 0.7071067811865476, "sum_unit_price_by_region_north": 6.5, "rows_by_region_North": 2,
		"count_qty_by_region_north": 1, "mean_qty_by_region_north": 1, "max_unit_price_by_region_south": 3.5,
		"count_note": 2,
	}
	for name, want := range cases {
		v, err := st.Lookup(name)
		require.NoError(t, err, name)
		assert.InDelta(t, want, v, 1e-12, name)
	}
	_, err := st.Lookup("median_qty")
	assert.ErrorIs(t, err, ErrUnknownMetric)
	_, err = st.Lookup("mean_note")
	assert.ErrorIs(t, err, ErrNotNumeric)
	_, err = st.Lookup("sum_unit_price_by_region_east")
	assert.ErrorIs(t, err, ErrUnknownMetric)
	assert.ErrorContains(t, err, "North")
}

func TestLookupAmbiguous(t *testing.T) {
	t.Parallel()
	st := writeCSV(t, "a b,a_b\n1,2\n")
	_, err := st.Lookup("sum_a_b")
	assert.ErrorIs(t, err, ErrAmbiguous)
}

func TestMetricsAllResolve(t *testing.T) {
	t.Parallel()
	st := writeCSV(t, "d,region,v\n2025-01-05,N,1\n2025-02-01,S,2\n2025-02-03,N,4\n")
	m := st.Metrics()
	assert.EqualValues(t, 6, m["sum_v_by_d_month_2025_02"])
	assert.EqualValues(t, 5, m["sum_v_by_region_n"])
	for name, want := range m {
		v, err := st.Lookup(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, v, name)
	}
}

func TestCompare(t *testing.T) {
	t.Parallel()
	st := writeCSV(t, "region,v\nN,1\nS,NA\nN,5\n")
	got := st.Compare(map[string]float64{
		"rows": 3, "mean_v": 3.0000001, "sum_v": 7, "median_v": 3, "mean_v_by_region_n": 3,
	})
	byName := map[string]Comparison{}
	for _, c := range got {
		byName[c.Name] = c
	}
	assert.Equal(t, StatusMatch, byName["rows"].Status)
	assert.Equal(t, StatusMatch, byName["mean_v"].Status, "within relative 1e-6")
	assert.Equal(t, StatusMismatch, byName["sum_v"].Status)
	assert.False(t, byName["sum_v"].Match)
	assert.Equal(t, 6.0, *byName["sum_v"].Recomputed)
	assert.Contains(t, byName["sum_v"].Hint, "claimed 7, recomputed 6")
	assert.Contains(t, byName["sum_v"].Hint, "encoding utf-8")
	assert.Equal(t, StatusUnverifiable, byName["median_v"].Status)
	assert.Nil(t, byName["median_v"].Recomputed)
	assert.Equal(t, StatusMatch, byName["mean_v_by_region_n"].Status)

	c := st.CompareOne("mean_v", 2) // 6 / 3 rows: the missing cell counted as 0
	assert.Contains(t, c.Hint, "missing cells counted as 0")
	c = st.CompareOne("rows", 4)
	assert.Contains(t, c.Hint, "header row seems to be counted")
}

func TestInReport(t *testing.T) {
	t.Parallel()
	report := "# Report\n\nRows: 1,234 orders. Total revenue: 1,234,567.89 EUR; mean 57.23.\n" +
		"North share 12.5%. Big: 3.2e+06. Month 2025-03 was best. Delta −4.5.\n| rows | 200 |\n"
	cases := []struct {
		v     float64
		found bool
	}{
		{1234, true}, {1234567.891, true}, {57.2345, true}, {57.236, false}, {0.125, true},
		{3200000, true}, {3249999, true}, {200, true}, {2025, true}, {-4.5, true}, {7, false},
		{0.004, false}, {99, false},
	}
	for _, c := range cases {
		ok, _ := InReport(report, c.v)
		assert.Equal(t, c.found, ok, "%v", c.v)
	}
	checks := CheckReport(report, map[string]float64{"rows": 200, "mean_x": 57.2345, "sum_y": 42})
	assert.Equal(t, []ReportCheck{
		{Name: "mean_x", Claimed: 57.2345, Found: true, Printed: "57.23"},
		{Name: "rows", Claimed: 200, Found: true, Printed: "200"},
		{Name: "sum_y", Claimed: 42, Found: false},
	}, checks)
	ok, _ := InReport("value 0", 0)
	assert.True(t, ok, "an exact zero is printed as 0")
	ok, _ = InReport("value 0", 0.004)
	assert.False(t, ok, "0 does not stand for 0.004")
}

func TestVerify(t *testing.T) {
	t.Parallel()
	st := writeCSV(t, "region,v\nN,1\nS,NA\nN,5\n")
	good := st.Verify(map[string]float64{"rows": 3, "mean_v": 3, "sum_v_by_region_n": 6},
		"# Report\n3 rows; mean v = 3.00; North total 6.\n")
	assert.True(t, good.OK(), "%v", good.Failures)
	assert.Equal(t, 3, good.Matched)

	// A wrong subject: claims a number it did not compute, omits it from the report.
	bad := st.Verify(map[string]float64{"rows": 3, "mean_v": 2, "median_v": 3}, "3 rows")
	assert.False(t, bad.OK())
	// mean_v: mismatch, and absent from the report.
	assert.Len(t, bad.Failures, 2, "%v", bad.Failures)
	assert.Len(t, bad.Unverifiable, 1)

	noRows := st.Verify(map[string]float64{"mean_v": 3, "sum_v": 6}, "mean 3, sum 6")
	assert.False(t, noRows.OK())
	assert.Contains(t, noRows.Failures[0], "rows not claimed")
	_, err := json.Marshal(noRows)
	assert.NoError(t, err, "JSON-safe")
}

func TestStatsJSONSafe(t *testing.T) {
	t.Parallel()
	st := writeCSV(t, "a,b,c\nx,1,NA\ny,2,NA\n")
	b, err := json.Marshal(st)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"min":null`)
	assert.Contains(t, string(b), `"group_rows":{"x":1,"y":1}`)
}
