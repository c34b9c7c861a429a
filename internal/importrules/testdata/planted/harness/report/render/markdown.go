// Package render breaks renderers-do-no-scoring (markdown.go, html.go) and
// renderers-import-no-class-summary (html.go).
package render

import "example.com/planted/harness/rubric"

func renderMD() float64 { return rubric.Evaluate().Score + renderHTML(0) }
