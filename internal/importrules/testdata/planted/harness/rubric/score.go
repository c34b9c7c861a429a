package rubric

// ComputeFinal is a scoring function (never called here).
func ComputeFinal() float64 { return 0 }

// The score computation owns the tolerance and M5's split (clean here).
const (
	pointsTolerance = 0.005
	defenseFraction = 0.5
)

// M5Split is M5's split.
func M5Split(w float64) (float64, float64) { return w * (1 - defenseFraction), w * defenseFraction }

// PointsExceed compares beyond rounding.
func PointsExceed(p, limit float64) bool { return p > limit+pointsTolerance }
