package classreport

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/osb-capstone/acceptance/harness/report"
)

// MergedRun is one bundle MergeClass found: where, from which run.
type MergedRun struct {
	Bundle string // the bundle directory
	Run    string // the run it belongs to: the argument it was found under, and its run id
	Doc    report.Document
	Err    error // report.json could not be read
}

// GradedTwice is a submission that more than one of the merged runs graded.
type GradedTwice struct {
	Submission string
	Shown      MergedRun   // the latest graded: the one the summary counts
	Others     []MergedRun // the earlier ones, left out of the numbers
}

// Merge is what MergeClass wrote.
type Merge struct {
	Runs    []string // the arguments, each a run (a class directory) or one bundle
	Bundles []string // the bundles the summary counts, one per submission
	Twice   []GradedTwice
}

// Versions a merge insists are equal across every bundle: the suite's
// version and source revision, and the rubric's hash.
var mergeVersionKeys = []struct{ key, what string }{
	{"acceptance", "suite versions"},
	{"build", "suite builds (source revisions)"},
	{"rubric", "rubric hashes"},
}

// MergeClass merges the bundles of any number of runs (each argument a class
// directory written by `acceptance grade`, e.g. one shard's --out, or one
// report bundle) into one class summary in out (class.md, class.csv,
// class.html), built by ReadClass and WriteClass like a one-call class's.
//
// It is strict: bundles graded by different suite versions, builds or
// rubric hashes are refused (the error says which values, and where), and
// nothing is written. A submission (by its identity, Document.Submission)
// graded in more than one run is counted once, the latest graded, and its
// line names every run that graded it. A bundle whose report.json cannot be
// read is listed as unreadable, as in a one-call class.
func MergeClass(out string, runs []string) (Merge, error) {
	m := Merge{Runs: runs}
	if len(runs) == 0 {
		return m, errors.New("report: merge: name at least one class directory or bundle")
	}
	var found []MergedRun
	for _, r := range runs {
		bs, err := bundlesUnder(r)
		if err != nil {
			return m, err
		}
		for _, b := range bs {
			mr := MergedRun{Bundle: b, Run: filepath.Clean(r)}
			mr.Doc, mr.Err = report.ReadDocument(b)
			if mr.Err == nil && mr.Doc.RunID != "" {
				mr.Run += " (run " + mr.Doc.RunID + ")"
			}
			found = append(found, mr)
		}
	}
	if len(found) == 0 {
		return m, fmt.Errorf("report: merge: no report bundle in %s", strings.Join(runs, ", "))
	}
	if err := checkMergeVersions(found); err != nil {
		return m, err
	}
	// One per submission: the latest graded; the others are named on its line.
	byID := map[string][]MergedRun{}
	var order []string
	var keep []MergedRun
	for _, f := range found {
		id := mergeIdentity(f)
		if id == "" {
			keep = append(keep, f)
			continue
		}
		if _, ok := byID[id]; !ok {
			order = append(order, id)
		}
		byID[id] = append(byID[id], f)
	}
	for _, id := range order {
		fs := byID[id]
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Doc.EndedAt.After(fs[j].Doc.EndedAt) })
		keep = append(keep, fs[0])
		if len(fs) > 1 {
			m.Twice = append(m.Twice, GradedTwice{Submission: id, Shown: fs[0], Others: fs[1:]})
		}
	}
	// The class order: bundle directory names (NN-name: NN is the position
	// in the list the class was graded from, the same in every shard).
	sort.SliceStable(keep, func(i, j int) bool {
		a, b := filepath.Base(keep[i].Bundle), filepath.Base(keep[j].Bundle)
		if a != b {
			return a < b
		}
		return keep[i].Bundle < keep[j].Bundle
	})
	for _, k := range keep {
		m.Bundles = append(m.Bundles, k.Bundle)
	}
	c := ReadClass(out, m.Bundles)
	for _, tw := range m.Twice {
		for i := range c.Students {
			if c.Students[i].Bundle != relTo(out, tw.Shown.Bundle) {
				continue
			}
			names := []string{tw.Shown.Run + " [shown: the latest]"}
			for _, o := range tw.Others {
				names = append(names, o.Run)
			}
			c.Students[i].Name += fmt.Sprintf(" (graded in %d runs: %s)", 1+len(tw.Others), strings.Join(names, "; "))
		}
	}
	return m, WriteClass(out, c)
}

// mergeIdentity is the submission a bundle graded: its recorded identity,
// else (bundles from before it was recorded, and --subject runs) the subject.
func mergeIdentity(f MergedRun) string {
	if f.Err != nil {
		return ""
	}
	if f.Doc.Submission != "" {
		return f.Doc.Submission
	}
	return f.Doc.Subject
}

// checkMergeVersions refuses bundles that differ in a version a merge
// insists on, naming each value and where it was found.
func checkMergeVersions(found []MergedRun) error {
	var errs []error
	for _, k := range mergeVersionKeys {
		where := map[string][]string{}
		var values []string
		for _, f := range found {
			if f.Err != nil {
				continue
			}
			v, ok := f.Doc.Versions[k.key]
			if !ok {
				v = "(none recorded)"
			}
			if _, seen := where[v]; !seen {
				values = append(values, v)
			}
			where[v] = append(where[v], f.Bundle)
		}
		if len(values) < 2 {
			continue
		}
		var parts []string
		for _, v := range values {
			bs := where[v]
			more := ""
			if len(bs) > 2 {
				more = fmt.Sprintf(" and %d more", len(bs)-2)
				bs = bs[:2]
			}
			parts = append(parts, fmt.Sprintf("%s %q in %s%s", k.key, v, strings.Join(bs, ", "), more))
		}
		errs = append(errs, fmt.Errorf("bundles graded by different %s: %s", k.what, strings.Join(parts, "; ")))
	}
	if len(errs) > 0 {
		return fmt.Errorf("report: merge refused, the bundles are not comparable: %w", errors.Join(errs...))
	}
	return nil
}

// bundlesUnder is dir itself when it is a report bundle, else the bundles
// directly inside it (a class directory): directories with a report.json or
// a meta.json (a bundle whose run was killed before its report).
func bundlesUnder(dir string) ([]string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("report: merge: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("report: merge: %s is not a directory", dir)
	}
	if isBundle(dir) {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("report: merge: %w", err)
	}
	var out []string
	for _, e := range entries {
		if p := filepath.Join(dir, e.Name()); e.IsDir() && isBundle(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func isBundle(dir string) bool {
	for _, f := range []string{report.JSONFile, report.MetaFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}
