// Package render turns a report document into the bundle's files, one file
// per format (markdown.go report.md, json.go report.json, junit.go junit.xml,
// html.go report.html, gradescope.go results.json), with one verdict-to-words
// table for all of them and for the class summary (words.go). Like godog's
// formatters, each registers itself with the core (report.Register) in init;
// the core (harness/report) imports no renderer. A new format is a file here
// with its Write function, registered in init under its file name (which
// joins report.AllOutputs).
//
// Renderers compute no score: they print the document's own figures and the
// final score the core set in d.Points (report.Scored). internal/importrules
// fails the build if a renderer calls a scoring function.
package render

import (
	"errors"
	"io"

	"github.com/osb-capstone/acceptance/harness/report"
)

func init() {
	report.Register(report.JSONFile, WriteJSON)
	report.Register(report.MarkdownFile, WriteMarkdown)
	report.Register(report.JUnitFile, WriteJUnit)
	report.Register(report.HTMLFile, WriteHTML)
	report.Register(report.GradescopeFile, WriteGradescope)
}

// scored is the final score the renderers print (d.Points: the reviewer's
// when reviewed, else the measured points alone) and whether it is a
// reviewer's.
func scored(d report.Document) (f *report.Final, reviewed bool, err error) {
	if d.Points == nil {
		return nil, false, errors.New("render: the document has no final score (report.Scored sets it)")
	}
	return d.Points, d.Final != nil, nil
}

// WriteHTML renders report.html (writeHTML) with d's final score.
func WriteHTML(w io.Writer, d report.Document) error {
	f, reviewed, err := scored(d)
	if err != nil {
		return err
	}
	return writeHTML(w, d, f, reviewed)
}

// WriteGradescope renders results.json (writeGradescope) with d's final score.
func WriteGradescope(w io.Writer, d report.Document) error {
	f, reviewed, err := scored(d)
	if err != nil {
		return err
	}
	return writeGradescope(w, d, f, reviewed)
}
