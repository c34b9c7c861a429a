package render

import (
	"example.com/planted/harness/rubric"

	_ "example.com/planted/harness/report/compare"
)

func renderHTML(score float64) float64 {
	if score == 0 {
		score = rubric.ComputeFinal()
	}
	return score
}
