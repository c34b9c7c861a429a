package recompute

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseNumber(t *testing.T) {
	t.Parallel()
	good := map[string]float64{"1": 1, "-2.5": -2.5, " 3 ": 3, "+4": 4, "1e3": 1000, "1.5E-2": 0.015, ".5": 0.5, "5.": 5}
	for s, want := range good {
		v, ok := ParseNumber(s)
		assert.True(t, ok, s)
		assert.Equal(t, want, v, s)
	}
	for _, s := range []string{"", "1,234", "0x10", "1_000", "abc", "1.2.3", "e5", "1e", "--1", "12%", "€5", "2025-03-01"} {
		_, ok := ParseNumber(s)
		assert.False(t, ok, s)
	}
	v, ok := ParseNumber("-inf")
	assert.True(t, ok)
	assert.True(t, v < 0)
}

func TestIsMissing(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "NA", "NaN", "null", "NULL", "n/a", "N/A", "#N/A", "<NA>", "nan", "-nan"} {
		assert.True(t, IsMissing(s), s)
	}
	for _, s := range []string{" ", "None", "na", "missing", "0", " NA"} {
		assert.False(t, IsMissing(s), s)
	}
}

func TestSniffDelimiter(t *testing.T) {
	t.Parallel()
	cases := map[string]rune{
		"a,b,c\n1,2,3":                ',',
		"a;b;c\n1;2;3":                ';',
		"a\tb\tc\n":                   '\t',
		"a|b|c":                       '|',
		`"x,y";"z,w";v` + "\n":        ';',
		"\xef\xbb\xbfa;b\n":           ';',
		"single\n1,2,3,4":             ',',
		`"multi` + "\n" + `line";b;c`: ';',
		"a,b;c":                       ',',
	}
	for in, want := range cases {
		assert.Equal(t, string(want), string(SniffDelimiter([]byte(in))), "%q", in)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "mean_unit_price", Normalize("mean_Unit Price"))
	assert.Equal(t, "sum_revenue_by_order_date_month_2025_03", Normalize("sum_revenue_by_order_date_month_2025-03"))
	assert.Equal(t, "münchen", Normalize("  München! "))
	assert.Equal(t, "order_id", Normalize("\ufefforder_id"))
}

func TestEqualTolerance(t *testing.T) {
	t.Parallel()
	assert.True(t, Equal(1000000, 1000000.5))
	assert.False(t, Equal(1000000, 1000002))
	assert.True(t, Equal(0, 1e-10))
	assert.False(t, Equal(0, 1e-8))
	assert.True(t, Equal(57.123456789, 57.1234568))
}
