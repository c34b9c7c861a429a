// Package report: the core; document.go imports a renderer.
package report

import "example.com/planted/harness/rubric"

// ComputeFinal is scoring.
func ComputeFinal() float64 { return rubric.Evaluate().Score }
