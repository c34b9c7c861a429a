package recompute

import (
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// numberRE finds numbers: an optional sign, digits with optional thousands
// groups (",", "_", "'", thin or no-break space), decimals, an exponent.
var numberRE = regexp.MustCompile(`[-+−]?(?:\d{1,3}(?:[,_'\x{202F}\x{00A0}\x{2009}]\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?%?`)

// printed is a number found in text with its printed precision.
type printed struct {
	text  string
	value float64
	unit  float64 // one unit of the last printed digit
	sig   int     // significant digits printed
}

func extractNumbers(text string) []printed {
	var out []printed
	for _, loc := range numberRE.FindAllStringIndex(text, -1) {
		tok := text[loc[0]:loc[1]]
		// A sign directly after a letter or digit is a hyphen ("2025-03").
		if r, _ := utf8.DecodeRuneInString(tok); r == '-' || r == '+' || r == '−' {
			if loc[0] > 0 {
				prev, _ := utf8.DecodeLastRuneInString(text[:loc[0]])
				if unicode.IsLetter(prev) || unicode.IsDigit(prev) {
					tok = tok[utf8.RuneLen(r):]
				}
			}
		}
		out = append(out, parsePrinted(tok)...)
	}
	return out
}

func parsePrinted(tok string) []printed {
	pct := strings.HasSuffix(tok, "%")
	tok = strings.TrimSuffix(tok, "%")
	clean := strings.NewReplacer(",", "", "_", "", "'", "", "\u202f", "", "\u00a0", "", "\u2009", "", "−", "-").Replace(tok)
	mant, exp := clean, 0
	if i := strings.IndexAny(clean, "eE"); i >= 0 {
		mant = clean[:i]
		e, err := strconv.Atoi(clean[i+1:])
		if err != nil {
			return nil
		}
		exp = e
	}
	v, err := strconv.ParseFloat(clean, 64)
	if err != nil {
		return nil
	}
	decimals := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		decimals = len(mant) - i - 1
	}
	sig := 0
	leading := true
	for _, r := range mant {
		if r < '0' || r > '9' {
			continue
		}
		if leading && r == '0' {
			continue
		}
		leading = false
		sig++
	}
	unit := math.Pow(10, float64(exp-decimals))
	p := printed{text: tok, value: v, unit: unit, sig: sig}
	out := []printed{p}
	if pct {
		out = append(out, printed{text: tok + "%", value: v / 100, unit: unit / 100, sig: sig})
	}
	return out
}

func (p printed) matches(v float64) bool {
	if Equal(p.value, v) {
		return true
	}
	if p.sig < 2 {
		return false
	}
	return math.Abs(p.value-v) <= p.unit/2*(1+1e-9)
}

// InReport reports whether value appears in the text, and how it was printed.
func InReport(text string, value float64) (bool, string) {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return false, ""
	}
	for _, p := range extractNumbers(text) {
		if p.matches(value) {
			return true, p.text
		}
	}
	return false, ""
}

// ReportCheck is one claimed metric looked for in report.md.
type ReportCheck struct {
	Name    string  `json:"name"`
	Claimed float64 `json:"claimed"`
	Found   bool    `json:"found"`
	Printed string  `json:"printed,omitempty"`
}

// CheckReport looks for every claimed metric in the report text (sorted by name).
func CheckReport(text string, claimed map[string]float64) []ReportCheck {
	nums := extractNumbers(text)
	names := make([]string, 0, len(claimed))
	for k := range claimed {
		names = append(names, k)
	}
	sort.Strings(names)
	out := make([]ReportCheck, 0, len(names))
	for _, name := range names {
		v := claimed[name]
		rc := ReportCheck{Name: name, Claimed: v}
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			for _, p := range nums {
				if p.matches(v) {
					rc.Found, rc.Printed = true, p.text
					break
				}
			}
		}
		out = append(out, rc)
	}
	return out
}
