package rubric

// ComputeFinal is a scoring function (never called here).
func ComputeFinal() float64 { return 0 }
