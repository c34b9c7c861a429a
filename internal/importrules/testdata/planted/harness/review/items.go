// Package review breaks points-compare-only-in-score (the tolerance written
// again, in two spellings); calling the score's functions is clean.
package review

import r "example.com/planted/harness/rubric"

func over(p, limit float64) bool { return p > limit+0.005 || r.PointsExceed(p, limit) }

func below(a, b float64) bool { return a < b-5e-3 }

func demo(w float64) float64 { d, _ := r.M5Split(w); return d }
