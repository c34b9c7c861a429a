package recompute

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/text/encoding/charmap"
)

// ErrEmpty is returned for a 0-byte file (or one holding only a BOM or
// blank lines): there is no header to read.
var ErrEmpty = errors.New("recompute: the file is empty: no header row and no data")

// FormatError is malformed CSV, with the physical line where it was found.
type FormatError struct {
	Line   int // 1-based physical line
	Column int // 1-based byte column when known, else 0
	Msg    string
	Err    error
}

func (e *FormatError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("recompute: malformed CSV at line %d, column %d: %s", e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("recompute: malformed CSV at line %d: %s", e.Line, e.Msg)
}

func (e *FormatError) Unwrap() error { return e.Err }

// DefaultGroupCap is the default number of distinct values up to which a
// column is kept as a grouping (category) column.
const DefaultGroupCap = 50

// Options tune File. The zero value sniffs and detects everything.
type Options struct {
	Delimiter rune   // 0 = sniff
	Encoding  string // "" = detect; else EncodingUTF8, EncodingLatin1, EncodingWindows1252
	GroupCap  int    // 0 = DefaultGroupCap
}

// Stats is the harness's reading of one CSV file.
type Stats struct {
	Path      string    `json:"path"`
	Bytes     int64     `json:"bytes"`
	SHA256    string    `json:"sha256"`
	Lines     int64     `json:"lines"` // physical lines (what `wc -l` counts, plus an unterminated last line)
	Encoding  string    `json:"encoding"`
	BOM       bool      `json:"bom"`
	Delimiter string    `json:"delimiter"`
	Header    []string  `json:"header"`
	Rows      int       `json:"rows"`
	Columns   []*Column `json:"columns"`
	GroupCap  int       `json:"group_cap"`
	// MultilineRecords counts records spanning more than one physical line
	// (quoted fields with embedded line breaks).
	MultilineRecords int `json:"multiline_records"`
}

// Column holds one column's statistics.
type Column struct {
	Name    string `json:"name"`
	Index   int    `json:"index"`
	Count   int    `json:"count"`   // non-missing cells
	Missing int    `json:"missing"` // missing cells
	// NumericCount is how many non-missing cells are numbers.
	NumericCount int `json:"numeric_count"`
	// NonNumericExample is the first non-missing cell that is not a number.
	NonNumericExample string  `json:"non_numeric_example,omitempty"`
	Sum               float64 `json:"sum"`
	Min               float64 `json:"min"`
	Max               float64 `json:"max"`
	// Std is the sample standard deviation (ddof=1); NaN when Count < 2.
	Std float64 `json:"-"`
	// Groups is the per-value aggregate table when this column has at most
	// GroupCap distinct values; nil when it overflowed.
	Groups map[string]*Group `json:"-"`
	// GroupOverflow is true when the column had more than GroupCap distinct values.
	GroupOverflow bool `json:"group_overflow"`
	// Months is the per-"YYYY-MM" table when every non-missing value is an ISO date.
	Months map[string]*Group `json:"-"`

	sum        neumaier
	mean, m2   float64 // Welford
	dateCount  int
	monthsOver bool
}

// Group aggregates the rows sharing one value of a grouping column.
type Group struct {
	Value string `json:"value"`
	Rows  int    `json:"rows"`
	// Per target column index: count of numbers, sum, min, max.
	Count []int     `json:"count"`
	Sum   []float64 `json:"sum"`
	Min   []float64 `json:"min"`
	Max   []float64 `json:"max"`
	sums  []neumaier
}

// IsNumeric reports whether every non-missing cell is a number (and there is one).
func (c *Column) IsNumeric() bool { return c.Count > 0 && c.NumericCount == c.Count }

// Mean is Sum/NumericCount (NaN when there are no numbers).
func (c *Column) Mean() float64 {
	if c.NumericCount == 0 {
		return math.NaN()
	}
	return c.Sum / float64(c.NumericCount)
}

// IsDate reports whether every non-missing cell starts with an ISO date.
func (c *Column) IsDate() bool { return c.Count > 0 && c.dateCount == c.Count && !c.monthsOver }

// MissingTotal is the number of missing cells in the table.
func (s *Stats) MissingTotal() int {
	n := 0
	for _, c := range s.Columns {
		n += c.Missing
	}
	return n
}

// Column returns the column whose normalised name is Normalize(name).
func (s *Stats) Column(name string) (*Column, bool) {
	want := Normalize(name)
	var found *Column
	for _, c := range s.Columns {
		if Normalize(c.Name) == want {
			if found != nil {
				return nil, false
			}
			found = c
		}
	}
	return found, found != nil
}

// File reads path with default options.
func File(path string) (*Stats, error) { return FileWithOptions(path, Options{}) }

// FileWithOptions reads path (two streaming passes, constant memory apart
// from the bounded group tables).
func FileWithOptions(path string, opt Options) (*Stats, error) {
	scan, err := scanFile(path)
	if err != nil {
		return nil, err
	}
	st := &Stats{Path: path, Bytes: scan.bytes, SHA256: scan.sha256, Lines: scan.lines,
		Encoding: scan.encoding, BOM: scan.bom, GroupCap: opt.GroupCap}
	if st.GroupCap <= 0 {
		st.GroupCap = DefaultGroupCap
	}
	if opt.Encoding != "" {
		st.Encoding = opt.Encoding
	}
	if scan.bytes == 0 {
		return nil, ErrEmpty
	}
	delim := opt.Delimiter
	if delim == 0 {
		delim = SniffDelimiter(scan.prefix)
	}
	st.Delimiter = string(delim)

	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256*1024)
	if scan.bom {
		if _, err := br.Discard(len(utf8BOM)); err != nil {
			return nil, err
		}
	}
	var r io.Reader = br
	switch st.Encoding {
	case EncodingUTF8:
	case EncodingLatin1:
		r = charmap.ISO8859_1.NewDecoder().Reader(br)
	case EncodingWindows1252:
		r = charmap.Windows1252.NewDecoder().Reader(br)
	default:
		return nil, fmt.Errorf("recompute: unsupported encoding %q", st.Encoding)
	}
	cr := csv.NewReader(r)
	cr.Comma = delim
	cr.LazyQuotes = false
	cr.FieldsPerRecord = -1 // checked below, with a clearer message
	cr.ReuseRecord = true

	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, ErrEmpty
	}
	if err != nil {
		return nil, formatErr(err)
	}
	st.Header = headerNames(header)
	ncol := len(st.Header)
	for i, name := range st.Header {
		st.Columns = append(st.Columns, &Column{Name: name, Index: i,
			Min: math.Inf(1), Max: math.Inf(-1),
			Groups: map[string]*Group{}, Months: map[string]*Group{}})
	}
	nums := make([]float64, ncol)
	isNum := make([]bool, ncol)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, formatErr(err)
		}
		startLine, _ := cr.FieldPos(0)
		if len(rec) != ncol {
			return nil, &FormatError{Line: startLine,
				Msg: fmt.Sprintf("expected %d fields (as in the header), saw %d", ncol, len(rec))}
		}
		if endLine, _ := cr.FieldPos(ncol - 1); endLine != startLine {
			st.MultilineRecords++
		} else if lastLineBreaks(rec) {
			st.MultilineRecords++
		}
		st.Rows++
		for i, cell := range rec {
			c := st.Columns[i]
			isNum[i] = false
			if IsMissing(cell) {
				c.Missing++
				continue
			}
			c.Count++
			if _, ok := isoMonth(cell); ok {
				c.dateCount++
			}
			v, ok := ParseNumber(cell)
			if !ok {
				if c.NonNumericExample == "" {
					c.NonNumericExample = clip(cell, 80)
				}
				continue
			}
			nums[i], isNum[i] = v, true
			c.NumericCount++
			c.sum.add(v)
			c.Min = math.Min(c.Min, v)
			c.Max = math.Max(c.Max, v)
			d := v - c.mean
			c.mean += d / float64(c.NumericCount)
			c.m2 += d * (v - c.mean)
		}
		for i, cell := range rec {
			c := st.Columns[i]
			if IsMissing(cell) {
				continue
			}
			if c.Groups != nil {
				g := c.Groups[cell]
				if g == nil {
					if len(c.Groups) >= st.GroupCap {
						c.Groups, c.GroupOverflow = nil, true
					} else {
						g = newGroup(strings.Clone(cell), ncol)
						c.Groups[g.Value] = g
					}
				}
				if g != nil {
					g.add(rec, nums, isNum)
				}
			}
			if c.Months != nil {
				if m, ok := isoMonth(cell); ok {
					g := c.Months[m]
					if g == nil {
						if len(c.Months) >= st.GroupCap {
							c.Months, c.monthsOver = nil, true
						} else {
							g = newGroup(m, ncol)
							c.Months[m] = g
						}
					}
					if g != nil {
						g.add(rec, nums, isNum)
					}
				}
			}
		}
	}
	for _, c := range st.Columns {
		c.Sum = c.sum.value()
		if c.NumericCount == 0 {
			c.Min, c.Max = math.NaN(), math.NaN()
		}
		c.Std = math.NaN()
		if c.NumericCount > 1 {
			c.Std = math.Sqrt(c.m2 / float64(c.NumericCount-1))
		}
		if !c.IsDate() {
			c.Months = nil
		}
		for _, g := range c.Groups {
			g.finish()
		}
		for _, g := range c.Months {
			g.finish()
		}
	}
	return st, nil
}

func newGroup(value string, ncol int) *Group {
	g := &Group{Value: value, Count: make([]int, ncol), Sum: make([]float64, ncol),
		Min: make([]float64, ncol), Max: make([]float64, ncol), sums: make([]neumaier, ncol)}
	for i := range g.Min {
		g.Min[i], g.Max[i] = math.Inf(1), math.Inf(-1)
	}
	return g
}

func (g *Group) add(rec []string, nums []float64, isNum []bool) {
	g.Rows++
	for j := range rec {
		if !isNum[j] {
			continue
		}
		v := nums[j]
		g.Count[j]++
		g.sums[j].add(v)
		g.Min[j] = math.Min(g.Min[j], v)
		g.Max[j] = math.Max(g.Max[j], v)
	}
}

func (g *Group) finish() {
	for j := range g.sums {
		g.Sum[j] = g.sums[j].value()
		if g.Count[j] == 0 {
			g.Min[j], g.Max[j] = math.NaN(), math.NaN()
		}
	}
}

// lastLineBreaks reports a line break inside the last field (FieldPos gives
// the start of the field, so a break there is not seen by line numbers).
func lastLineBreaks(rec []string) bool {
	return len(rec) > 0 && strings.ContainsAny(rec[len(rec)-1], "\r\n")
}

// headerNames applies pandas' naming of empty and duplicate header cells.
func headerNames(h []string) []string {
	out := make([]string, len(h))
	seen := map[string]int{}
	for i, name := range h {
		if name == "" {
			name = "Unnamed: " + strconv.Itoa(i)
		}
		base := name
		for seen[name] > 0 {
			name = base + "." + strconv.Itoa(seen[base])
			seen[base]++
		}
		seen[name]++
		out[i] = name
	}
	return out
}

func formatErr(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		msg := pe.Err.Error()
		switch {
		case errors.Is(pe.Err, csv.ErrBareQuote):
			msg = `a double quote appears inside an unquoted field (quote the field and double the quote: "")`
		case errors.Is(pe.Err, csv.ErrQuote):
			msg = `a quoted field is not closed, or a quote is followed by something other than the delimiter`
		}
		return &FormatError{Line: pe.Line, Column: pe.Column, Msg: msg, Err: err}
	}
	return fmt.Errorf("recompute: reading CSV: %w", err)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return strings.Clone(s)
	}
	return strings.Clone(s[:n]) + "…"
}
