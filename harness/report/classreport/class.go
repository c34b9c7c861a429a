package classreport

import (
	"github.com/osb-capstone/acceptance/harness/confine"

	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	_ "embed"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Class summary files, written by WriteClassSummary.
const (
	ClassMarkdownFile = "class.md"
	ClassCSVFile      = "class.csv"
	ClassHTMLFile     = "class.html"
	ClassJSONFile     = "class.json"
)

// ClassStudent is one submission's line in the class summary.
type ClassStudent struct {
	Name   string // the bundle directory's name
	Bundle string // path of the bundle relative to the summary directory
	Err    string // the bundle could not be read
	Doc    report.Document
	// Final is set when the bundle has a review (review.json).
	Final *report.Final
}

// ClassEntry is one rubric entry's tally across the class.
type ClassEntry struct {
	ID                                   rubric.ID
	Title                                string
	Passed, Failed, NotMeasured, Errored int
	// Flaky counts submissions whose entry passed only some repetitions
	// (--repeat): measured, never passed.
	Flaky    int
	PassRate float64 // passed / (passed + failed + flaky); 0 when nothing was measured
	Measured int     // passed + failed + flaky
	// StandIn counts submissions whose verdict of this entry rests on a
	// stand-in component (a real target's part built by this project).
	StandIn int
	// Security: a security criterion (failing it fails the submission).
	Security bool
}

// ClassReason is a failure reason and how many submissions it hit.
type ClassReason struct {
	ID       rubric.ID
	Verdict  rubric.Verdict
	Reason   string
	Count    int
	Students []string
}

// Class is the whole summary.
type Class struct {
	Students []ClassStudent
	Items    []report.ScoringRow // scoring items (titles, weights) of the first readable bundle
	Entries  []ClassEntry
	Reasons  []ClassReason
	Passed   int
	NotPass  int
	Incompl  int
	Broken   int
	// WithFlaky counts submissions with at least one flaky entry.
	WithFlaky int
	// SecurityFailed counts submissions that failed a security criterion.
	SecurityFailed int

	// Total is the score's maximum (100).
	Total float64
	// Dist and Histogram are the bundles' measured scores; FinalDist and
	// FinalHistogram the reviewed bundles' final scores (nil when none is
	// reviewed).
	Dist           *Distribution
	Histogram      []HistBin
	FinalDist      *Distribution
	FinalHistogram []HistBin
	// MostFailed are the entries the class failed, highest rate first.
	MostFailed []ClassFailure
}

// maxReasons bounds the "most common failure reasons" table.
const maxReasons = 15

// ReadClass reads each bundle's report.json (and review.json, if any). A
// bundle that cannot be read is listed with its error; it never stops the
// others.
func ReadClass(dir string, bundles []string) Class {
	var c Class
	entries := map[rubric.ID]*ClassEntry{}
	var order []rubric.ID
	reasons := map[string]*ClassReason{}
	for _, b := range bundles {
		s := ClassStudent{Name: filepath.Base(filepath.Clean(b)), Bundle: relTo(dir, b)}
		d, err := report.ReadDocument(b)
		if err != nil {
			s.Err = strings.ReplaceAll(err.Error(), filepath.Clean(b), s.Bundle)
			c.Broken++
			c.Students = append(c.Students, s)
			continue
		}
		s.Doc = d
		if f, err := report.ReviewedFinal(b, d); err == nil {
			s.Final = f
		}
		if c.Items == nil {
			c.Items = d.Scoring
		}
		switch d.Verdict {
		case rubric.OverallPassed:
			c.Passed++
		case rubric.OverallNotPassed:
			c.NotPass++
		default:
			c.Incompl++
		}
		anyFlaky := false
		for _, r := range d.AllEntries() {
			e, ok := entries[r.ID]
			if !ok {
				e = &ClassEntry{ID: r.ID, Title: r.Title}
				entries[r.ID] = e
				order = append(order, r.ID)
			}
			switch r.Verdict {
			case rubric.Passed:
				e.Passed++
			case rubric.Failed:
				e.Failed++
			case rubric.Flaky:
				e.Flaky++
				anyFlaky = true
			case rubric.HarnessError:
				e.Errored++
			default:
				e.NotMeasured++
			}
			if r.Verdict == rubric.Failed || r.Verdict == rubric.Flaky || r.Verdict == rubric.HarnessError {
				k := string(r.ID) + "\x00" + string(r.Verdict) + "\x00" + r.Reason
				cr, ok := reasons[k]
				if !ok {
					cr = &ClassReason{ID: r.ID, Verdict: r.Verdict, Reason: r.Reason}
					reasons[k] = cr
				}
				cr.Count++
				cr.Students = append(cr.Students, s.Name)
			}
		}
		if anyFlaky {
			c.WithFlaky++
		}
		c.Students = append(c.Students, s)
	}
	for _, id := range order {
		e := entries[id]
		e.Measured = e.Passed + e.Failed + e.Flaky
		if e.Measured > 0 {
			e.PassRate = float64(e.Passed) / float64(e.Measured)
		}
		c.Entries = append(c.Entries, *e)
	}
	for _, r := range reasons {
		c.Reasons = append(c.Reasons, *r)
	}
	sort.Slice(c.Reasons, func(i, j int) bool {
		a, b := c.Reasons[i], c.Reasons[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Reason < b.Reason
	})
	if len(c.Reasons) > maxReasons {
		c.Reasons = c.Reasons[:maxReasons]
	}
	c.addStats()
	return c
}

// WriteClassSummary reads each bundle's report.json and writes
// dir/class.md, dir/class.csv, dir/class.html and dir/class.json: per
// student the verdict and the score by scoring item, the score
// distribution, per entry the pass and failure rates, the most-failed
// entries with their reasons grouped by similar text, and (class.json,
// class.html) every entry's verdict per student. Every number is the bundle's own (report.json;
// the final score from its review.json when reviewed).
func WriteClassSummary(dir string, bundles []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: class summary: %w", err)
	}
	return WriteClass(dir, ReadClass(dir, bundles))
}

// WriteClass writes a class read by ReadClass (and perhaps annotated, as
// MergeClass does) into dir/class.md, dir/class.csv and dir/class.html.
func WriteClass(dir string, c Class) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: class summary: %w", err)
	}
	var errs []error
	for _, w := range []struct {
		name  string
		write func(*bytes.Buffer, Class) error
	}{{ClassMarkdownFile, writeClassMarkdown}, {ClassCSVFile, writeClassCSV}, {ClassHTMLFile, writeClassHTML}, {ClassJSONFile, writeClassJSON}} {
		var buf bytes.Buffer
		if err := w.write(&buf, c); err != nil {
			errs = append(errs, fmt.Errorf("report: render %s: %w", w.name, err))
			continue
		}
		if err := report.WriteFileAtomic(filepath.Join(dir, w.name), buf.Bytes()); err != nil {
			errs = append(errs, fmt.Errorf("report: write %s: %w", w.name, err))
		}
	}
	return errors.Join(errs...)
}

// RefreshClassSummary re-writes the class summary in classDir (written by
// `acceptance grade`) over the bundles its class.csv lists, when bundle is
// one of them: after a review of one submission the summary shows its final
// score. It reports whether it re-wrote anything; no class.csv in classDir,
// or a bundle it does not list, is (false, nil).
func RefreshClassSummary(classDir, bundle string) (bool, error) {
	f, err := os.Open(filepath.Join(classDir, ClassCSVFile))
	if err != nil {
		if os.IsNotExist(err) {
			return false, nil
		}
		return false, fmt.Errorf("report: class summary: %w", err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) == 0 {
		return false, fmt.Errorf("report: class summary %s: not a class.csv: %v", filepath.Join(classDir, ClassCSVFile), err)
	}
	col := -1
	for i, h := range rows[0] {
		if h == "bundle" {
			col = i
		}
	}
	if col < 0 {
		return false, fmt.Errorf("report: class summary %s has no bundle column", filepath.Join(classDir, ClassCSVFile))
	}
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			return filepath.Clean(p)
		}
		return a
	}
	want := abs(bundle)
	var bundles []string
	listed := false
	for _, r := range rows[1:] {
		if col >= len(r) || r[col] == "" {
			continue
		}
		b := filepath.FromSlash(r[col])
		if !filepath.IsAbs(b) {
			b = filepath.Join(classDir, b)
		}
		listed = listed || abs(b) == want
		bundles = append(bundles, b)
	}
	if !listed {
		return false, nil
	}
	return true, WriteClassSummary(classDir, bundles)
}

func relTo(dir, p string) string {
	ad, err1 := filepath.Abs(dir)
	ap, err2 := filepath.Abs(p)
	if err1 == nil && err2 == nil {
		if r, err := filepath.Rel(ad, ap); err == nil {
			return filepath.ToSlash(r)
		}
	}
	return filepath.ToSlash(p)
}

func (s ClassStudent) itemEarned(item rubric.ID) (float64, bool) {
	for _, it := range s.Doc.Scoring {
		if it.Item == item {
			return it.Earned, true
		}
	}
	return 0, false
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 0, 64) + "%" }

func writeClassMarkdown(buf *bytes.Buffer, c Class) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Class summary: %d submissions\n\n", len(c.Students))
	fmt.Fprintf(&b, "Passed %d, not passed %d, incomplete %d", c.Passed, c.NotPass, c.Incompl)
	if c.Broken > 0 {
		fmt.Fprintf(&b, ", unreadable bundles %d", c.Broken)
	}
	if c.WithFlaky > 0 {
		fmt.Fprintf(&b, "; %d with a flaky entry (passed only some repetitions)", c.WithFlaky)
	}
	b.WriteString(". Scores are each bundle's own: earned of measured (of 100); the final score only where a reviewer has judged.\n\n")
	if line := confinementLine(c); line != "" {
		b.WriteString(line + "\n\n")
	}
	writeClassDistribution(&b, c)
	b.WriteString("## Per student\n\n| Student | Verdict | Score | Measured |")
	for _, it := range c.Items {
		fmt.Fprintf(&b, " %s (%d) |", it.Item, it.Weight)
	}
	b.WriteString(" Final (reviewed) | Bundle |\n|---|---|---:|---:|")
	for range c.Items {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---|\n")
	for _, s := range c.Students {
		if s.Err != "" {
			fmt.Fprintf(&b, "| %s | **unreadable** | | |", render.Cell(s.Name))
			for range c.Items {
				b.WriteString(" |")
			}
			fmt.Fprintf(&b, " | %s: %s |\n", render.Cell(s.Bundle), render.Cell(s.Err))
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |", render.Cell(s.Name), render.VerdictTitle(s.Doc.Verdict), rubric.Num(s.Doc.Score.Earned), rubric.Num(s.Doc.Score.Measured))
		for _, it := range c.Items {
			if e, ok := s.itemEarned(it.Item); ok {
				fmt.Fprintf(&b, " %s |", rubric.Num(e))
			} else {
				b.WriteString(" |")
			}
		}
		final := ""
		if s.Final != nil {
			final = rubric.Num(s.Final.Score)
			if !s.Final.Complete {
				final += " (review pending)"
			}
		}
		fmt.Fprintf(&b, " %s | %s |\n", final, render.Link(s.Bundle, s.Bundle+"/"+report.MarkdownFile))
	}
	b.WriteString("\n## Per entry\n\nPass rate = passed / (passed + failed + flaky); flaky (passed only some repetitions of `--repeat`) is never a pass; not measured and harness errors are counted apart.\n\n")
	b.WriteString("| Entry | Passed | Failed | Flaky | Not measured | Harness error | Pass rate |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, e := range c.Entries {
		rate := "n/a"
		if e.Measured > 0 {
			rate = pct(e.PassRate)
		}
		fmt.Fprintf(&b, "| **%s** %s | %d | %d | %d | %d | %d | %s |\n", e.ID, render.Cell(e.Title), e.Passed, e.Failed, e.Flaky, e.NotMeasured, e.Errored, rate)
	}
	writeClassMostFailed(&b, c)
	b.WriteString("\n## Most common failure reasons\n\n")
	if len(c.Reasons) == 0 {
		b.WriteString("Nothing failed.\n")
	} else {
		b.WriteString("| Entry | Verdict | Reason | Submissions |\n|---|---|---|---|\n")
		for _, r := range c.Reasons {
			fmt.Fprintf(&b, "| %s | %s | %s | %d: %s |\n", r.ID, r.Verdict, render.Cell(r.Reason), r.Count, render.Cell(strings.Join(r.Students, ", ")))
		}
	}
	_, err := buf.WriteString(b.String())
	return err
}

func writeClassCSV(buf *bytes.Buffer, c Class) error {
	w := csv.NewWriter(buf)
	head := []string{"student", "bundle", "verdict", "exit_code", "score_earned", "score_measured", "score_total"}
	for _, it := range c.Items {
		head = append(head, string(it.Item)+"_earned")
	}
	head = append(head, "final_score", "review_complete")
	for _, e := range c.Entries {
		head = append(head, string(e.ID))
	}
	head = append(head, "error")
	if err := w.Write(head); err != nil {
		return err
	}
	for _, s := range c.Students {
		row := []string{csvText(s.Name), s.Bundle}
		if s.Err != "" {
			row = append(row, "unreadable", "", "", "", "")
			for range c.Items {
				row = append(row, "")
			}
			row = append(row, "", "")
			for range c.Entries {
				row = append(row, "")
			}
			if err := w.Write(append(row, csvText(s.Err))); err != nil {
				return err
			}
			continue
		}
		d := s.Doc
		row = append(row, string(d.Verdict), strconv.Itoa(d.ExitCode), rubric.Num(d.Score.Earned), rubric.Num(d.Score.Measured), rubric.Num(d.Score.Total))
		for _, it := range c.Items {
			e, _ := s.itemEarned(it.Item)
			row = append(row, rubric.Num(e))
		}
		if s.Final != nil {
			row = append(row, rubric.Num(s.Final.Score), strconv.FormatBool(s.Final.Complete))
		} else {
			row = append(row, "", "")
		}
		verdicts := map[rubric.ID]rubric.Verdict{}
		for _, r := range d.AllEntries() {
			verdicts[r.ID] = r.Verdict
		}
		for _, e := range c.Entries {
			row = append(row, string(verdicts[e.ID]))
		}
		if err := w.Write(append(row, "")); err != nil {
			return err
		}
	}
	if err := writeClassCSVFooter(w, c, head); err != nil {
		return err
	}
	w.Flush()
	return w.Error()
}

// confinementLine says at which confinement level the submissions' commands
// ran (docs/confinement.md, "Levels"), each level with its submissions when
// they differ; "" when no bundle says.
func confinementLine(c Class) string {
	by := map[confine.Level][]string{}
	for _, s := range c.Students {
		if s.Err == "" && s.Doc.Confinement != nil && s.Doc.Confinement.Level != "" {
			by[s.Doc.Confinement.Level] = append(by[s.Doc.Confinement.Level], s.Name)
		}
	}
	if len(by) == 0 {
		return ""
	}
	var parts []string
	for _, l := range confine.Levels {
		if names := by[l]; len(names) > 0 {
			if len(by) == 1 {
				parts = append(parts, fmt.Sprintf("level %s (%d submissions)", l, len(names)))
			} else {
				parts = append(parts, fmt.Sprintf("level %s: %s", l, render.Cell(strings.Join(names, ", "))))
			}
		}
	}
	return "Confinement of the submissions' commands: " + strings.Join(parts, "; ") + "."
}

// ConfinementLevelOf is the weakest confinement level among the class's
// readable bundles ("" when none says).
func ConfinementLevelOf(c Class) confine.Level {
	var ls []confine.Level
	for _, s := range c.Students {
		if s.Err == "" && s.Doc.Confinement != nil {
			ls = append(ls, s.Doc.Confinement.Level)
		}
	}
	return confine.Weakest(ls...)
}
