package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

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

var writers = map[string]func(*bytes.Buffer, Document) error{
	JSONFile:       func(b *bytes.Buffer, d Document) error { return WriteJSON(b, d) },
	MarkdownFile:   func(b *bytes.Buffer, d Document) error { return WriteMarkdown(b, d) },
	JUnitFile:      func(b *bytes.Buffer, d Document) error { return WriteJUnit(b, d) },
	HTMLFile:       func(b *bytes.Buffer, d Document) error { return WriteHTML(b, d) },
	GradescopeFile: func(b *bytes.Buffer, d Document) error { return WriteGradescope(b, d) },
}

// scored is the final score the renderers print: the reviewer's (d.Final,
// reviewed) or, before any review, the measured points alone. Renderers never
// compute a score themselves (internal/importrules).
func scored(d Document) (f *Final, reviewed bool) {
	if d.Final != nil {
		return d.Final, true
	}
	return ComputeFinal(d, nil), false
}

// WriteHTML renders report.html (writeHTML) with d's final score.
func WriteHTML(w io.Writer, d Document) error {
	f, reviewed := scored(d)
	return writeHTML(w, d, f, reviewed)
}

// WriteGradescope renders results.json (writeGradescope) with d's final score.
func WriteGradescope(w io.Writer, d Document) error {
	f, reviewed := scored(d)
	return writeGradescope(w, d, f, reviewed)
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
	for _, name := range names {
		var buf bytes.Buffer
		if err := writers[name](&buf, *doc); err != nil {
			errs = append(errs, fmt.Errorf("report: render %s: %w", name, err))
			continue
		}
		if err := writeFileAtomic(filepath.Join(dir, name), buf.Bytes()); err != nil {
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
	for _, name := range []string{JSONFile, GradescopeFile} {
		var want bytes.Buffer
		if err := writers[name](&want, doc); err != nil {
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
