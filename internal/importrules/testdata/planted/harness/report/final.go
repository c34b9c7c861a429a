// Package report: render_md.go and render_html.go break renderers-do-no-scoring.
package report

import "example.com/planted/harness/rubric"

// ComputeFinal is scoring.
func ComputeFinal() float64 { return rubric.Evaluate().Score }
