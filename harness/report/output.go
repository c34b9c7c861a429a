package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/osb-capstone/acceptance/harness/regularfile"
)

// Further output file names inside the bundle.
const (
	HTMLFile       = "report.html"
	GradescopeFile = "results.json"
)

// AllOutputs are the files a render writes, report.json first.
var AllOutputs = []string{JSONFile, MarkdownFile, JUnitFile, HTMLFile, GradescopeFile}

// ReviewOutputs are the files a review re-renders: everything but
// report.json, which holds only what the harness measured.
var ReviewOutputs = []string{MarkdownFile, JUnitFile, HTMLFile, GradescopeFile}

// A Renderer writes one output file of a bundle from its document. It prints
// what the document holds (d.Points for the score) and computes nothing.
type Renderer func(w io.Writer, d Document) error

// renderers are the output writers by file name, registered by
// harness/report/render (its init), the way godog's formatters register.
// The core imports no renderer (internal/importrules).
var (
	renderersMu sync.RWMutex
	renderers   = map[string]Renderer{}
)

// Register makes r the writer of the bundle file name (one of AllOutputs).
// harness/report/render registers every output; a program that writes
// bundles imports it (harness/core and harness/review do).
func Register(name string, r Renderer) {
	renderersMu.Lock()
	defer renderersMu.Unlock()
	renderers[name] = r
}

// renderTo renders the bundle file name from d (Scored) into buf.
func renderTo(buf *bytes.Buffer, name string, d Document) error {
	renderersMu.RLock()
	r := renderers[name]
	renderersMu.RUnlock()
	if r == nil {
		return fmt.Errorf("no renderer is registered for %s (import harness/report/render)", name)
	}
	return r(buf, d)
}

// Scored is d with the final score the renderers print (d.Points): the
// reviewer's (d.Final) or, before any review, the measured points alone.
// Renderers never compute a score themselves (internal/importrules).
func Scored(d Document) Document {
	if d.Final != nil {
		d.Points = d.Final
	} else {
		d.Points = ComputeFinal(d, nil)
	}
	return d
}

// writeOutputs renders the named files of a bundle from doc; every writer is
// attempted even if another fails. The timelines of the subject runs and of
// the submission's other commands are read from the bundle first (for
// report.html).
func writeOutputs(dir string, doc *Document, names []string) error {
	var errs []error
	if doc.Runs == nil {
		runs, err := ReadRuns(dir)
		errs = append(errs, err)
		doc.Runs = runs
	}
	if doc.Invocations == nil {
		invs, err := ReadInvocations(dir)
		errs = append(errs, err)
		doc.Invocations = invs
	}
	scored := Scored(*doc)
	for _, name := range names {
		var buf bytes.Buffer
		if err := renderTo(&buf, name, scored); err != nil {
			errs = append(errs, fmt.Errorf("report: render %s: %w", name, err))
			continue
		}
		if err := WriteFileAtomic(filepath.Join(dir, name), buf.Bytes()); err != nil {
			errs = append(errs, fmt.Errorf("report: write %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// ReadDocument reads a bundle's report.json.
func ReadDocument(dir string) (Document, error) {
	var d Document
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return d, fmt.Errorf("report: %w", err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return d, fmt.Errorf("report: %s: %w", filepath.Join(dir, JSONFile), err)
	}
	if d.SchemaVersion != SchemaVersion {
		return d, fmt.Errorf("report: %s has schema_version %q; this harness reads %q", filepath.Join(dir, JSONFile), d.SchemaVersion, SchemaVersion)
	}
	return d, nil
}

// LoadJudgments reads a bundle's review.json; (nil, nil) when there is none.
// It does not validate the judgement (harness/review does, when recording it).
func LoadJudgments(dir string) (*Judgments, error) {
	b, err := os.ReadFile(filepath.Join(dir, ReviewFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var j Judgments
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("report: %s: %w", filepath.Join(dir, ReviewFile), err)
	}
	return &j, nil
}

// ReviewedFinal is the final score of the bundle in dir, whose measured
// document is d, with its review.json merged: (nil, nil) when it has no
// review. Loading a bundle is where its final score is computed
// (ComputeFinal); the class summary shows it beside the measured score.
func ReviewedFinal(dir string, d Document) (*Final, error) {
	j, err := LoadJudgments(dir)
	if err != nil || j == nil {
		return nil, err
	}
	return ComputeFinal(d, j), nil
}

// Rerender re-renders a finalized bundle from its report.json with a
// reviewer's final score merged in (final may be nil): report.md, junit.xml,
// report.html and results.json. report.json itself is not rewritten, so the
// measured part stays byte-identical.
func Rerender(dir string, final *Final) (Document, error) {
	d, err := ReadDocument(dir)
	if err != nil {
		return d, err
	}
	d.Final = final
	return d, writeOutputs(dir, &d, ReviewOutputs)
}

// Reassert checks that report.json and results.json in dir are still what
// doc (the grader's own record of the run, as Finalize returned it) renders
// to; if either was changed after the grader wrote it (an escaped process of
// the submission rewriting its own grade), every output is written again
// from doc. It returns the names of the files that had changed.
func Reassert(dir string, doc Document) ([]string, error) {
	var changed []string
	scored := Scored(doc)
	for _, name := range []string{JSONFile, GradescopeFile} {
		var want bytes.Buffer
		if err := renderTo(&want, name, scored); err != nil {
			return nil, fmt.Errorf("report: render %s: %w", name, err)
		}
		got, err := regularfile.ReadMax(filepath.Join(dir, name), int64(want.Len()))
		if err != nil || !bytes.Equal(got, want.Bytes()) {
			changed = append(changed, name)
		}
	}
	if len(changed) == 0 {
		return nil, nil
	}
	return changed, writeOutputs(dir, &doc, AllOutputs)
}
