package rubric

import (
	"fmt"
	"math"
	"strings"
)

// Num formats a score figure with at most two decimals.
func Num(f float64) string {
	s := fmt.Sprintf("%.2f", Round2(f))
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// Round2 rounds a score figure to two decimals (the precision every score is kept at).
func Round2(f float64) float64 { return math.Round(f*100) / 100 }
