package rubric

// questionWeight breaks points-compare-only-in-score: M5's split outside score.go.
func questionWeight(w float64) float64 { return w * defenseFraction / 15 }
