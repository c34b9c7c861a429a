// Package classreport breaks class-summary-does-no-scoring.
package classreport

import "example.com/planted/harness/report"

func final() float64 { return report.ComputeFinal() }
