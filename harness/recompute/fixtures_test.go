package recompute

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/fixtures"
	"github.com/osb-capstone/acceptance/fixtures/synth"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	p, err := fixtures.Materialize(t.TempDir(), name)
	require.NoError(t, err)
	return p
}

func mustFile(t *testing.T, name string) *Stats {
	t.Helper()
	st, err := File(fixture(t, name))
	require.NoError(t, err, name)
	return st
}

func lookup(t *testing.T, st *Stats, name string) float64 {
	t.Helper()
	v, err := st.Lookup(name)
	require.NoError(t, err, name)
	return v
}

// Every readable fixture: the detected encoding, BOM and delimiter are what
// the generator says it wrote.
func TestFixturesDetectedAsDeclared(t *testing.T) {
	t.Parallel()
	m, err := fixtures.Load()
	require.NoError(t, err)
	for _, e := range m.Fixtures {
		if e.Expect != fixtures.ExpectOK && e.File != "header_only.csv" {
			continue
		}
		st := mustFile(t, e.File)
		assert.Equal(t, e.Encoding, st.Encoding, e.File)
		assert.Equal(t, e.BOM, st.BOM, e.File)
		assert.Equal(t, e.Delimiter, st.Delimiter, e.File)
	}
}

// sales.csv against the generator's own integer arithmetic (an oracle that
// shares no code with the CSV reader).
func TestSalesAgainstGenerator(t *testing.T) {
	t.Parallel()
	st := mustFile(t, "sales.csv")
	g := synth.NewSales(2025)
	var revenue, qty int64
	byRegion := map[string]int64{}
	byMonth := map[string]int64{}
	rowsByCat := map[string]int{}
	maxUnit := int64(0)
	for i := 0; i < 200; i++ {
		r := g.Next()
		revenue += r.RevenueCents()
		qty += r.Quantity
		byRegion[r.Region] += r.RevenueCents()
		byMonth[r.Date.Format("2006-01")] += r.RevenueCents()
		rowsByCat[r.Category]++
		maxUnit = max(maxUnit, r.UnitCents)
	}
	assert.Equal(t, 200, st.Rows)
	assert.EqualValues(t, 201, st.Lines)
	assert.Equal(t, synth.SalesHeader, st.Header)
	assert.InDelta(t, float64(revenue)/100, lookup(t, st, "sum_revenue"), 1e-6)
	assert.InDelta(t, float64(revenue)/100/200, lookup(t, st, "mean_revenue"), 1e-9)
	assert.EqualValues(t, qty, lookup(t, st, "sum_quantity"))
	assert.InDelta(t, float64(maxUnit)/100, lookup(t, st, "max_unit_price"), 1e-9)
	assert.EqualValues(t, 0, lookup(t, st, "missing_total"))
	assert.EqualValues(t, 8, lookup(t, st, "columns"))
	for region, cents := range byRegion {
		assert.InDelta(t, float64(cents)/100, lookup(t, st, "sum_revenue_by_region_"+region), 1e-6, region)
	}
	require.Len(t, byMonth, 6, "orders span six months")
	for month, cents := range byMonth {
		assert.InDelta(t, float64(cents)/100, lookup(t, st, "sum_revenue_by_order_date_month_"+month), 1e-6, month)
	}
	for cat, n := range rowsByCat {
		assert.EqualValues(t, n, lookup(t, st, "rows_by_category_"+cat), cat)
	}
	assert.Equal(t, []string{"2025-01", "2025-02", "2025-03", "2025-04", "2025-05", "2025-06"}, st.GroupValues("order_date_month"))
	oid, _ := st.Column("order_id")
	assert.True(t, oid.GroupOverflow, "200 distinct ids exceed the group cap")
	_, err := st.Lookup("rows_by_order_id_ORD-000001")
	assert.ErrorIs(t, err, ErrNotGroupable)
}

func TestMissingValuesUsesPandasMarkers(t *testing.T) {
	t.Parallel()
	st := mustFile(t, "missing_values.csv")
	raw, err := os.ReadFile(fixture(t, "missing_values.csv"))
	require.NoError(t, err)
	// Independent tally: every marker the generator uses, counted per cell.
	assert.Equal(t, 72, st.Rows)
	total := 0
	for _, c := range st.Columns {
		assert.Equal(t, st.Rows, c.Count+c.Missing, c.Name)
		total += c.Missing
	}
	assert.Positive(t, total)
	assert.EqualValues(t, total, lookup(t, st, "missing_total"))
	assert.EqualValues(t, 2, lookup(t, st, "missing_station"))
	temp, _ := st.Column("temperature_c")
	assert.True(t, temp.IsNumeric(), "NA markers do not make a numeric column text")
	assert.InDelta(t, temp.Sum/float64(temp.NumericCount), lookup(t, st, "mean_temperature_c"), 1e-12)
	assert.Contains(t, string(raw), ",NA,")
	// Rows whose station is missing belong to no station group.
	n := 0.0
	for _, s := range st.GroupValues("station") {
		n += lookup(t, st, "rows_by_station_"+s)
	}
	assert.EqualValues(t, st.Rows-2, n)
}

func TestQuotedFieldsWithCommasAndNewlines(t *testing.T) {
	t.Parallel()
	st := mustFile(t, "quoted_fields.csv")
	assert.Equal(t, 40, st.Rows)
	assert.Equal(t, []string{"ticket_id", "customer", "comment", "rating", "resolved_hours"}, st.Header)
	assert.Greater(t, st.Lines, int64(41), "line breaks inside quotes")
	assert.Positive(t, st.MultilineRecords)
	cust, _ := st.Column("customer")
	assert.Contains(t, cust.Groups, `Initech "Payments" Team`)
	assert.Contains(t, cust.Groups, "Acme, Inc.")
	rating, _ := st.Column("rating")
	assert.True(t, rating.IsNumeric())
	// Hint for a subject that counted physical lines.
	c := st.CompareOne("rows", float64(st.Lines-1))
	assert.Equal(t, StatusMismatch, c.Status)
	assert.Contains(t, c.Hint, "line breaks")
}

func TestBOMStripped(t *testing.T) {
	t.Parallel()
	st := mustFile(t, "bom_utf8.csv")
	assert.True(t, st.BOM)
	assert.Equal(t, "store_id", st.Header[0])
	assert.Equal(t, 36, st.Rows)
	assert.Contains(t, st.GroupValues("city"), "München")
	v := lookup(t, st, "sum_sales_eur_by_city_münchen")
	assert.Positive(t, v)
	assert.Equal(t, v, lookup(t, st, "sum_sales_eur_by_city_München"))
	c := st.CompareOne("rows", 37)
	assert.Contains(t, c.Hint, "BOM")
	assert.Contains(t, c.Hint, "header row seems to be counted")
}

func TestSemicolonDelimiter(t *testing.T) {
	t.Parallel()
	st := mustFile(t, "semicolon.csv")
	assert.Equal(t, ";", st.Delimiter)
	assert.EqualValues(t, 5, lookup(t, st, "columns"))
	assert.Equal(t, 48, st.Rows)
	cost, _ := st.Column("unit_cost")
	assert.True(t, cost.IsNumeric(), "decimals use '.'")
	c := st.CompareOne("columns", 1)
	assert.Equal(t, StatusMismatch, c.Status)
	assert.Contains(t, c.Hint, "delimiter")

	forced, err := FileWithOptions(fixture(t, "semicolon.csv"), Options{Delimiter: ','})
	require.NoError(t, err)
	assert.Len(t, forced.Columns, 1, "read with ',' the file is one column, as pandas' default shows")
}

func TestLatin1Decoded(t *testing.T) {
	t.Parallel()
	st := mustFile(t, "latin1.csv")
	assert.Equal(t, EncodingLatin1, st.Encoding)
	assert.Equal(t, 30, st.Rows)
	assert.Contains(t, st.GroupValues("city"), "Montréal")
	assert.Contains(t, st.GroupValues("client"), "Café Lumière")
	c := st.CompareOne("rows", 29)
	assert.Contains(t, c.Hint, "check the encoding: the file is iso-8859-1")
	assert.Contains(t, c.Hint, `encoding="latin-1"`)
}

func TestWindows1252Detected(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "cp1252.csv")
	// 0x80 is € in Windows-1252 (a C1 control in Latin-1).
	require.NoError(t, os.WriteFile(p, []byte("item,price\nCaf\xe9 \x80 menu,12.5\nTh\xe9,3\n"), 0o644))
	st, err := File(p)
	require.NoError(t, err)
	assert.Equal(t, EncodingWindows1252, st.Encoding)
	assert.Contains(t, st.GroupValues("item"), "Café € menu")
	assert.EqualValues(t, 15.5, lookup(t, st, "sum_price"))
}

func TestUTF8RuneAcrossChunkBoundaryStaysUTF8(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "big.csv")
	b := []byte("name,n\n")
	for len(b) < 256*1024-1 {
		b = append(b, "x,1\n"...)
	}
	b = b[:256*1024-1-len("é,2\n")+1]
	// Make sure "é" (2 bytes) straddles the 256 KiB read boundary.
	b = append(b[:256*1024-1-3], []byte("\né,2\n")...)
	require.NoError(t, os.WriteFile(p, b, 0o644))
	sc, err := scanFile(p)
	require.NoError(t, err)
	assert.Equal(t, EncodingUTF8, sc.encoding)
}

func TestEmptyFile(t *testing.T) {
	t.Parallel()
	_, err := File(fixture(t, "empty.csv"))
	assert.ErrorIs(t, err, ErrEmpty)
	p := filepath.Join(t.TempDir(), "blank.csv")
	require.NoError(t, os.WriteFile(p, []byte("\xef\xbb\xbf\n\n"), 0o644))
	_, err = File(p)
	assert.ErrorIs(t, err, ErrEmpty)
}

func TestHeaderOnly(t *testing.T) {
	t.Parallel()
	st := mustFile(t, "header_only.csv")
	assert.Equal(t, 0, st.Rows)
	assert.EqualValues(t, 0, lookup(t, st, "rows"))
	assert.EqualValues(t, 8, lookup(t, st, "columns"))
	_, err := st.Lookup("mean_revenue")
	assert.ErrorIs(t, err, ErrNoValues)
	c := st.CompareOne("mean_revenue", 0)
	assert.Equal(t, StatusUnverifiable, c.Status, "a number claimed for no data cannot match")
}

func TestMalformedHasLineNumber(t *testing.T) {
	t.Parallel()
	_, err := File(fixture(t, "malformed.csv"))
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 8, fe.Line)
	assert.Contains(t, err.Error(), "line 8")
	assert.Contains(t, err.Error(), "expected 8 fields")

	p := filepath.Join(t.TempDir(), "quote.csv")
	require.NoError(t, os.WriteFile(p, []byte("a,b\n1,2\n3,5\" screen\n"), 0o644))
	_, err = File(p)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 3, fe.Line)
	assert.Contains(t, err.Error(), "double quote")

	require.NoError(t, os.WriteFile(p, []byte("a,b\n1,\"unterminated\n"), 0o644))
	_, err = File(p)
	require.ErrorAs(t, err, &fe)

	require.NoError(t, os.WriteFile(p, []byte("a,b,c\n1,2\n"), 0o644))
	_, err = File(p)
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, 2, fe.Line)
}

func TestInjectionCellsAreJustText(t *testing.T) {
	t.Parallel()
	st := mustFile(t, "injection.csv")
	assert.Equal(t, 24, st.Rows)
	txt, _ := st.Column("review_text")
	for _, s := range synth.Injection {
		assert.Contains(t, txt.Groups, s)
	}
	assert.False(t, txt.IsNumeric())
	for _, p := range st.GroupValues("product") {
		assert.Positive(t, lookup(t, st, "mean_rating_by_product_"+p))
	}
}

func TestUTF16Rejected(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "u16.csv")
	require.NoError(t, os.WriteFile(p, []byte("\xff\xfea\x00,\x00b\x00\n\x00"), 0o644))
	_, err := File(p)
	assert.ErrorContains(t, err, "UTF-16")
}

func TestMissingFile(t *testing.T) {
	t.Parallel()
	_, err := File(filepath.Join(t.TempDir(), "nope.csv"))
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

func TestHeaderNamesLikePandas(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{"a", "a.1", "Unnamed: 2", "a.2", "b"}, headerNames([]string{"a", "a", "", "a", "b"}))
}

func TestNaNNeverMatches(t *testing.T) {
	t.Parallel()
	assert.False(t, Equal(math.NaN(), math.NaN()))
	assert.True(t, Equal(math.Inf(1), math.Inf(1)))
}
