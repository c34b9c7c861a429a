package recompute

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Tolerances used by Equal.
const (
	RelTol = 1e-6
	AbsTol = 1e-9
)

// Equal reports whether two numbers agree within |a-b| <= AbsTol or
// |a-b| <= RelTol*max(|a|,|b|). Equal infinities match; NaN never matches.
func Equal(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return false
	}
	if a == b {
		return true
	}
	d := math.Abs(a - b)
	return d <= AbsTol || d <= RelTol*math.Max(math.Abs(a), math.Abs(b))
}

// Comparison statuses.
const (
	StatusMatch        = "match"
	StatusMismatch     = "mismatch"
	StatusUnverifiable = "unverifiable" // the name is outside the convention or cannot be computed
	StatusNotClaimed   = "not_claimed"  // a metric the harness always checks (rows) was not claimed
)

// Comparison is one claimed metric against the harness's recomputation.
type Comparison struct {
	Name    string  `json:"name"`
	Claimed float64 `json:"claimed"`
	// Recomputed is nil when the metric could not be recomputed.
	Recomputed *float64 `json:"recomputed"`
	Match      bool     `json:"match"`
	Status     string   `json:"status"`
	// Hint explains a mismatch or why a claim is unverifiable, following
	// the course: suspect encoding, delimiter and header first, then the script.
	Hint string `json:"hint,omitempty"`
}

// Compare checks each claimed metric (sorted by name). rows is always part
// of a useful claim set; callers decide whether a missing "rows" claim is a
// failure.
func (s *Stats) Compare(claimed map[string]float64) []Comparison {
	names := make([]string, 0, len(claimed))
	for k := range claimed {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]Comparison, 0, len(names))
	for _, name := range names {
		out = append(out, s.CompareOne(name, claimed[name]))
	}
	return out
}

// CompareOne checks one claimed metric.
func (s *Stats) CompareOne(name string, claimed float64) Comparison {
	c := Comparison{Name: name, Claimed: claimed}
	v, err := s.Lookup(name)
	if err != nil {
		c.Status = StatusUnverifiable
		c.Hint = "cannot recompute: " + err.Error()
		if errors.Is(err, ErrUnknownMetric) {
			c.Hint += "; name metrics as in harness/recompute (rows, mean_<col>, sum_<col>_by_<cat>_<value>, …)"
		}
		return c
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		c.Status = StatusUnverifiable
		c.Hint = fmt.Sprintf("the recomputed value is not finite (%v)", v)
		return c
	}
	c.Recomputed = &v
	if Equal(claimed, v) {
		c.Match, c.Status = true, StatusMatch
		return c
	}
	c.Status = StatusMismatch
	c.Hint = s.hint(name, claimed, v)
	return c
}

// hint explains a mismatch: first what the numbers themselves point to (a
// header counted as data, physical lines counted as rows, a wrong delimiter
// giving one column, missing cells averaged as 0); then, in the course's
// order of suspicion, the file's own traits a reader must handle (encoding,
// BOM, delimiter) — named as things to check, since the file has them
// whether or not they caused this mismatch; then the script.
func (s *Stats) hint(name string, claimed, recomputed float64) string {
	var why []string
	n := Normalize(name)
	switch n {
	case "rows":
		switch {
		case claimed == float64(s.Rows+1):
			why = append(why, "header: the header row seems to be counted as data")
		case claimed == float64(s.Rows-1) && s.Rows > 0:
			why = append(why, "header: one data row is missing (first data row used as header?)")
		case s.MultilineRecords > 0 && (claimed == float64(s.Lines-1) || claimed == float64(s.Lines)):
			why = append(why, fmt.Sprintf("quoted fields: %d records contain line breaks, so physical lines (%d) are not rows (%d)", s.MultilineRecords, s.Lines, s.Rows))
		}
	case "columns":
		if claimed == 1 && len(s.Columns) > 1 {
			why = append(why, fmt.Sprintf("delimiter: 1 column means the file was split on the wrong delimiter (it uses %q)", s.Delimiter))
		}
	}
	if col, ok := strings.CutPrefix(n, "mean_"); ok {
		if c, ok := s.Column(col); ok && c.IsNumeric() && s.Rows > 0 && c.Missing > 0 &&
			Equal(claimed, c.Sum/float64(s.Rows)) {
			why = append(why, "missing values: the mean was divided by all rows, i.e. missing cells counted as 0")
		}
	}
	if s.Encoding != EncodingUTF8 {
		why = append(why, fmt.Sprintf("check the encoding: the file is %s, not UTF-8 (read it with encoding=%q)", s.Encoding, pandasEncoding(s.Encoding)))
	}
	if s.BOM {
		why = append(why, "check the encoding: the file starts with a UTF-8 BOM; a reader that keeps it names the first column \"\\ufeff"+firstOr(s.Header)+"\"")
	}
	if s.Delimiter != "," {
		why = append(why, fmt.Sprintf("check the delimiter: the file is delimited by %q, not ','", s.Delimiter))
	}
	why = append(why, fmt.Sprintf("claimed %s, recomputed %s; check the reading first (encoding %s, delimiter %q, header row %q), then the analysis script",
		fmtNum(claimed), fmtNum(recomputed), s.Encoding, s.Delimiter, strings.Join(s.Header, s.Delimiter)))
	return strings.Join(why, "; ")
}

func pandasEncoding(enc string) string {
	switch enc {
	case EncodingLatin1:
		return "latin-1"
	case EncodingWindows1252:
		return "cp1252"
	}
	return enc
}

func firstOr(h []string) string {
	if len(h) == 0 {
		return ""
	}
	return h[0]
}

func fmtNum(v float64) string { return fmt.Sprintf("%.10g", v) }
