package recompute

import (
	"math"
	"strconv"
	"strings"
)

// NAValues are pandas 1.5's default missing-value strings (read_csv
// na_values defaults), matched exactly.
var NAValues = []string{
	"", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
	"1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "n/a", "nan", "null",
}

var naSet = func() map[string]bool {
	m := make(map[string]bool, len(NAValues))
	for _, v := range NAValues {
		m[v] = true
	}
	return m
}()

// IsMissing reports whether a cell is missing under pandas' defaults.
func IsMissing(s string) bool { return naSet[s] }

// ParseNumber parses a cell as a number the way the recomputation counts
// numbers (see the package doc). ok is false for anything else.
func ParseNumber(s string) (v float64, ok bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i++
	}
	switch strings.ToLower(s[i:]) {
	case "inf", "infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	digits, dots := 0, 0
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
			if dots > 1 {
				return 0, false
			}
		case c == 'e' || c == 'E':
			if digits == 0 {
				return 0, false
			}
			j := i + 1
			if j < len(s) && (s[j] == '+' || s[j] == '-') {
				j++
			}
			if j == len(s) {
				return 0, false
			}
			for ; j < len(s); j++ {
				if s[j] < '0' || s[j] > '9' {
					return 0, false
				}
			}
			i = len(s)
		default:
			return 0, false
		}
	}
	if digits == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// isoMonth returns "YYYY-MM" when s starts with an ISO date YYYY-MM-DD
// (optionally followed by a time).
func isoMonth(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return "", false
	}
	if len(s) > 10 && s[10] != 'T' && s[10] != ' ' {
		return "", false
	}
	for _, i := range []int{0, 1, 2, 3, 5, 6, 8, 9} {
		if s[i] < '0' || s[i] > '9' {
			return "", false
		}
	}
	m := (s[5]-'0')*10 + s[6] - '0'
	d := (s[8]-'0')*10 + s[9] - '0'
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return "", false
	}
	return s[:7], true
}

// Normalize maps a metric, column or category name to its comparable form:
// lower case, runs of non-letters/digits → "_", trimmed of "_".
func Normalize(s string) string {
	var b strings.Builder
	pendingSep := false
	for _, r := range strings.ToLower(s) {
		if isWordRune(r) {
			if pendingSep && b.Len() > 0 {
				b.WriteByte('_')
			}
			pendingSep = false
			b.WriteRune(r)
		} else {
			pendingSep = true
		}
	}
	return b.String()
}

// neumaier is compensated summation.
type neumaier struct{ sum, c float64 }

func (n *neumaier) add(x float64) {
	t := n.sum + x
	if math.Abs(n.sum) >= math.Abs(x) {
		n.c += (n.sum - t) + x
	} else {
		n.c += (x - t) + n.sum
	}
	n.sum = t
}

func (n *neumaier) value() float64 {
	if math.IsInf(n.sum, 0) || math.IsNaN(n.sum) {
		return n.sum
	}
	return n.sum + n.c
}
