package report

import "example.com/planted/harness/rubric"

func renderMD() float64 { return rubric.Evaluate().Score }
