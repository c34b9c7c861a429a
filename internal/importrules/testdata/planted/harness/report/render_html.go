package report

func renderHTML(score float64) float64 {
	if score == 0 {
		score = ComputeFinal()
	}
	return score
}
