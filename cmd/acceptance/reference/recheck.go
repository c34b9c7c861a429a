package reference

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
	"unicode"
	"unicode/utf8"
)

// This file is step 6 of the course's workflow, "host-side independent
// recalculation": the host reads the CSV again with its own code (Go's
// encoding/csv, not pandas) and recomputes key numbers, so the numbers in the
// report are never trusted just because the sandbox printed them.
//
// It deliberately mirrors the documented reading rules, not the script's code:
// UTF-8 (BOM stripped) else Latin-1; delimiter = the most frequent of , ; TAB |
// in the header line; header = first record; blank lines skipped; pandas'
// default missing-value markers; a column is numeric when every non-missing
// value is a plain decimal number.

// HostNumbers is what the host recomputed.
type HostNumbers struct {
	Encoding  string `json:"encoding"`
	Delimiter string `json:"delimiter"`
	Rows      int64  `json:"rows"`
	Columns   int    `json:"columns"`
	// FirstNumeric is the first column (in file order) whose values are all
	// numbers; empty if there is none.
	FirstNumeric string  `json:"first_numeric_column,omitempty"`
	Mean         float64 `json:"mean"`
	Sum          float64 `json:"sum"`
	NonMissing   int64   `json:"non_missing"`
}

// ErrEmptyInput is returned for a 0-byte file.
var ErrEmptyInput = errors.New("the CSV file is empty (0 bytes)")

// naMarkers are pandas 1.5's default missing-value strings (exact match).
var naMarkers = map[string]bool{"": true, "#N/A": true, "#N/A N/A": true, "#NA": true, "-1.#IND": true,
	"-1.#QNAN": true, "-NaN": true, "-nan": true, "1.#IND": true, "1.#QNAN": true, "<NA>": true, "N/A": true,
	"NA": true, "NULL": true, "NaN": true, "None": true, "n/a": true, "nan": true, "null": true}

// column accumulates one column's statistics while streaming.
type column struct {
	numeric  bool
	nonNA    int64
	sum, err float64 // Neumaier compensated sum
}

func (c *column) add(x float64) {
	t := c.sum + x
	if math.Abs(c.sum) >= math.Abs(x) {
		c.err += (c.sum - t) + x
	} else {
		c.err += (x - t) + c.sum
	}
	c.sum = t
}

// RecomputeHost reads path (streaming) and recomputes rows, columns and the
// mean and sum of the first numeric column.
func RecomputeHost(path string) (*HostNumbers, error) {
	enc, bom, err := sniffEncoding(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	if bom {
		_, _ = br.Discard(3)
	}
	var r io.Reader = br
	if enc == "latin-1" {
		r = &latin1Reader{r: br}
	}
	text := bufio.NewReaderSize(r, 256<<10)
	header, _ := text.Peek(64 << 10)
	delim := sniffDelimiter(header)

	cr := csv.NewReader(text)
	cr.Comma = delim
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("the CSV has no header row")
	}
	if err != nil {
		return nil, fmt.Errorf("reading the header: %w", err)
	}
	names := append([]string(nil), head...)
	cols := make([]column, len(names))
	for i := range cols {
		cols[i].numeric = true
	}
	out := &HostNumbers{Encoding: enc, Delimiter: string(delim), Columns: len(names)}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading row %d: %w", out.Rows+1, err)
		}
		if len(rec) > len(names) {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("line %d has %d fields, the header has %d", line, len(rec), len(names))
		}
		out.Rows++
		for i := range cols {
			if i >= len(rec) || naMarkers[rec[i]] {
				continue // a short row is padded with missing values, as pandas does
			}
			c := &cols[i]
			c.nonNA++
			if !c.numeric {
				continue
			}
			x, ok := parseNumber(rec[i])
			if !ok {
				c.numeric = false
				continue
			}
			c.add(x)
		}
	}
	for i, c := range cols {
		if c.numeric && c.nonNA > 0 {
			out.FirstNumeric = names[i]
			out.NonMissing = c.nonNA
			out.Sum = c.sum + c.err
			out.Mean = out.Sum / float64(c.nonNA)
			break
		}
	}
	return out, nil
}

// parseNumber accepts what pandas reads as a number: an optional sign, digits
// with at most one '.', an optional exponent, or inf/infinity; surrounding
// spaces allowed. No thousands separators, hex or underscores.
func parseNumber(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsAny(s, "xX_pP") {
		return 0, false
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) {
		return 0, false
	}
	return x, true
}

// sniffEncoding streams the file: BOM → utf-8-sig; valid UTF-8 → utf-8;
// anything else → latin-1.
func sniffEncoding(path string) (enc string, bom bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 256<<10)
	if b, _ := br.Peek(3); len(b) == 0 {
		return "", false, ErrEmptyInput
	} else if len(b) == 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF {
		bom = true
	}
	var carry []byte
	buf := make([]byte, 256<<10)
	for {
		n, rerr := br.Read(buf)
		chunk := append(carry, buf[:n]...)
		// keep an incomplete trailing rune for the next round
		cut := len(chunk)
		for k := 1; k <= 3 && k <= len(chunk); k++ {
			if utf8.RuneStart(chunk[len(chunk)-k]) {
				if !utf8.FullRune(chunk[len(chunk)-k:]) {
					cut = len(chunk) - k
				}
				break
			}
		}
		if !utf8.Valid(chunk[:cut]) {
			return "latin-1", false, nil
		}
		carry = append([]byte(nil), chunk[cut:]...)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return "", false, rerr
		}
	}
	if len(carry) > 0 {
		return "latin-1", false, nil
	}
	if bom {
		return "utf-8-sig", true, nil
	}
	return "utf-8", false, nil
}

// sniffDelimiter counts each candidate in the header line, outside quotes.
func sniffDelimiter(data []byte) rune {
	counts := map[rune]int{}
	inQuote := false
	for _, r := range string(data) {
		if r == '"' {
			inQuote = !inQuote
			continue
		}
		if !inQuote && (r == '\n' || r == '\r') {
			break
		}
		if !inQuote {
			counts[r]++
		}
	}
	best, bestN := ',', 0
	for _, d := range []rune{',', ';', '\t', '|'} {
		if counts[d] > bestN {
			best, bestN = d, counts[d]
		}
	}
	return best
}

// latin1Reader decodes ISO-8859-1 bytes to UTF-8.
type latin1Reader struct {
	r   io.Reader
	buf []byte
}

func (l *latin1Reader) Read(p []byte) (int, error) {
	if len(p) < 2 {
		return 0, io.ErrShortBuffer
	}
	if cap(l.buf) < len(p)/2 {
		l.buf = make([]byte, len(p)/2)
	}
	n, err := l.r.Read(l.buf[:len(p)/2])
	out := 0
	for _, b := range l.buf[:n] {
		out += utf8.EncodeRune(p[out:], rune(b))
	}
	return out, err
}

// MetricName is the harness's naming convention for a column: lower case,
// every run of characters that are not letters or digits becomes "_".
func MetricName(s string) string {
	var b strings.Builder
	pending := false
	for _, r := range strings.ToLower(s) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if pending && b.Len() > 0 {
				b.WriteByte('_')
			}
			pending = false
			b.WriteRune(r)
			continue
		}
		pending = true
	}
	return b.String()
}

// Check is one comparison of a claimed number with the host's.
type Check struct {
	Name    string   `json:"name"`
	Claimed *float64 `json:"claimed"`
	Host    float64  `json:"host"`
	Match   bool     `json:"match"`
	Note    string   `json:"note,omitempty"`
}

// Tolerance for comparing floats: absolute or relative, whichever is larger.
const (
	absTol = 1e-9
	relTol = 1e-9
)

// Close reports whether a and b agree within the tolerance.
func Close(a, b float64) bool {
	d := math.Abs(a - b)
	return d <= absTol || d <= relTol*math.Max(math.Abs(a), math.Abs(b))
}

// CompareWithHost checks the sandbox's metrics against the host's numbers:
// rows, columns, and mean_/sum_ of the host's first numeric column.
func CompareWithHost(h *HostNumbers, metrics map[string]float64) []Check {
	claim := func(name string) *float64 {
		if v, ok := metrics[name]; ok {
			return &v
		}
		return nil
	}
	var out []Check
	add := func(name string, host float64, note string) {
		c := Check{Name: name, Claimed: claim(name), Host: host, Note: note}
		if c.Claimed == nil {
			c.Note = strings.TrimSpace(c.Note + " not reported by the sandbox")
		} else {
			c.Match = Close(*c.Claimed, host)
		}
		out = append(out, c)
	}
	add("rows", float64(h.Rows), "")
	add("columns", float64(h.Columns), "")
	if h.FirstNumeric != "" {
		slug := MetricName(h.FirstNumeric)
		add("mean_"+slug, h.Mean, fmt.Sprintf("column %q, %d non-missing values", h.FirstNumeric, h.NonMissing))
		add("sum_"+slug, h.Sum, fmt.Sprintf("column %q", h.FirstNumeric))
	}
	return out
}
