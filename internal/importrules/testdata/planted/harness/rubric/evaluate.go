package rubric

// Evaluate is a scoring function.
func Evaluate() Summary { return Summary{Score: 1} }
