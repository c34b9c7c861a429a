// Package compare is the upgrade check behind `acceptance diff`: two report
// bundles of the same subject and seed compared entry by entry, figure by
// figure and on their normalised evidence.
package compare

import (
	"encoding/json"
	"fmt"
	"github.com/osb-capstone/acceptance/harness/inert"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// bundlePath matches an absolute path into a bundle's evidence, as recorded
// while the bundle was elsewhere (moved, copied): only the bundle-relative
// part is compared.
var bundlePath = regexp.MustCompile(`(?:/[^/\s"'<>]+)+/evidence/`)

// Options tune Compare.
type Options struct {
	// Threshold is the relative increase of a latency or cost figure that
	// counts as a regression (0.25 = 25 %).
	Threshold float64
	// FloorMs is the smallest increase of a time figure (milliseconds) that
	// can count: a 40 ms step taking 60 ms is noise, not a regression.
	FloorMs float64
	// FloorBytes is the same for byte counts.
	FloorBytes float64
	// IgnoreNoise leaves fields that differ by nature (resource usage, uids,
	// pids, timings: Denoise) out of the evidence drift.
	IgnoreNoise bool
	// AcrossRubrics compares bundles graded under different rubrics (their
	// recorded rubric hashes differ) instead of refusing to; the comparison
	// then says so first (Comparison.RubricChange).
	AcrossRubrics bool
}

// RubricMismatch is Compare's refusal: the bundles were graded under
// different rubrics (as `acceptance class` refuses to merge such bundles),
// so their verdicts and scores do not measure the same thing.
type RubricMismatch struct {
	Old, New string // the recorded rubric hashes ("(none recorded)" for none)
}

func (e *RubricMismatch) Error() string {
	return fmt.Sprintf("the bundles were graded under different rubrics (rubric %s in the old bundle, %s in the new): "+
		"their verdicts and scores are not comparable", e.Old, e.New)
}

// rubricOf is a bundle's recorded rubric hash.
func rubricOf(d report.Document) string {
	if v, ok := d.Versions["rubric"]; ok && v != "" {
		return v
	}
	return "(none recorded)"
}

// DefaultOptions: 25 %, and at least 250 ms or 64 KiB.
var DefaultOptions = Options{Threshold: 0.25, FloorMs: 250, FloorBytes: 64 << 10}

// Comparison is what changed between two bundles of the same subject (e.g.
// against OpenSandbox version A and version B).
type Comparison struct {
	Old, New    string
	OldVerdict  rubric.Overall
	NewVerdict  rubric.Overall
	OldScore    rubric.Score
	NewScore    rubric.Score
	Entries     []EntryChange
	Drift       []EvidenceDrift
	Figures     []FigureChange
	Regressions []string
	// RubricChange is set when the bundles were graded under different
	// rubrics and Options.AcrossRubrics compared them anyway.
	RubricChange    *RubricMismatch
	OnlyInOld       []string // subject runs present in one bundle only
	OnlyInNew       []string
	FiguresCompared int
}

// EntryChange is an entry whose verdict changed.
type EntryChange struct {
	ID                   rubric.ID
	Old, New             rubric.Verdict
	OldReason, NewReason string
	Regression           bool
}

// EvidenceDrift is an entry whose normalised evidence differs.
type EvidenceDrift struct {
	ID   rubric.ID
	Diff string
}

// FigureChange is a latency or cost figure that moved beyond the threshold.
type FigureChange struct {
	Name       string
	Unit       string // ms | bytes | count
	Old, New   float64
	Regression bool // an increase beyond threshold and floor
}

// Regressed reports whether anything got worse.
func (c Comparison) Regressed() bool { return len(c.Regressions) > 0 }

// Compare compares two finalized bundles.
func Compare(oldDir, newDir string, o Options) (Comparison, error) {
	od, err := report.ReadDocument(oldDir)
	if err != nil {
		return Comparison{}, fmt.Errorf("old bundle: %w", err)
	}
	nd, err := report.ReadDocument(newDir)
	if err != nil {
		return Comparison{}, fmt.Errorf("new bundle: %w", err)
	}
	c := Comparison{Old: oldDir, New: newDir, OldVerdict: od.Verdict, NewVerdict: nd.Verdict, OldScore: od.Score, NewScore: nd.Score}
	if or, nr := rubricOf(od), rubricOf(nd); or != nr {
		m := &RubricMismatch{Old: or, New: nr}
		if !o.AcrossRubrics {
			return Comparison{}, m
		}
		c.RubricChange = m
	}
	if OverallRank(nd.Verdict) < OverallRank(od.Verdict) {
		c.Regressions = append(c.Regressions, fmt.Sprintf("verdict %s → %s", od.Verdict, nd.Verdict))
	}
	if rubric.PointsBelow(nd.Score.Earned, od.Score.Earned) {
		c.Regressions = append(c.Regressions, fmt.Sprintf("score %s → %s", rubric.Num(od.Score.Earned), rubric.Num(nd.Score.Earned)))
	}
	oldRows := map[rubric.ID]report.EntryRow{}
	for _, r := range od.AllEntries() {
		oldRows[r.ID] = r
	}
	for _, r := range nd.AllEntries() {
		or, ok := oldRows[r.ID]
		if !ok {
			continue
		}
		if or.Verdict != r.Verdict || or.Category != r.Category {
			ch := EntryChange{ID: r.ID, Old: or.Verdict, New: r.Verdict, OldReason: or.Reason, NewReason: r.Reason,
				Regression: EntryRank(r.Verdict) < EntryRank(or.Verdict)}
			c.Entries = append(c.Entries, ch)
			if ch.Regression {
				c.Regressions = append(c.Regressions, fmt.Sprintf("%s %s → %s", r.ID, or.Verdict, r.Verdict))
			}
		}
		ot, ok1 := report.SnapshotText(oldDir, or.Evidence, nil)
		nt, ok2 := report.SnapshotText(newDir, r.Evidence, nil)
		ot, nt = bundlePath.ReplaceAllString(ot, "<bundle>/evidence/"), bundlePath.ReplaceAllString(nt, "<bundle>/evidence/")
		if o.IgnoreNoise {
			ot, nt = Denoise(ot), Denoise(nt)
		}
		if (ok1 || ok2) && ot != nt {
			d, _ := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{A: difflib.SplitLines(ot), B: difflib.SplitLines(nt),
				FromFile: "old/" + string(r.ID), ToFile: "new/" + string(r.ID), Context: 1})
			c.Drift = append(c.Drift, EvidenceDrift{ID: r.ID, Diff: clipLines(d, 40)})
		}
	}
	of, oruns := Figures(oldDir)
	nf, nruns := Figures(newDir)
	c.OnlyInOld, c.OnlyInNew = minusKeys(oruns, nruns), minusKeys(nruns, oruns)
	names := make([]string, 0, len(nf))
	for k := range nf {
		if _, ok := of[k]; ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	c.FiguresCompared = len(names)
	for _, k := range names {
		ov, nv := of[k], nf[k]
		unit := figureUnit(k)
		floor := 1.0
		switch unit {
		case "ms":
			floor = o.FloorMs
		case "bytes":
			floor = o.FloorBytes
		}
		delta := nv - ov
		if math.Abs(delta) < floor || math.Abs(delta) <= o.Threshold*math.Max(ov, 0) {
			continue
		}
		fc := FigureChange{Name: k, Unit: unit, Old: ov, New: nv, Regression: delta > 0}
		c.Figures = append(c.Figures, fc)
		if fc.Regression {
			c.Regressions = append(c.Regressions, fmt.Sprintf("%s %s → %s %s", k, rubric.Num(ov), rubric.Num(nv), unit))
		}
	}
	return c, nil
}

// OverallRank orders overall verdicts: a move down is a regression.
func OverallRank(v rubric.Overall) int {
	switch v {
	case rubric.OverallPassed:
		return 2
	case rubric.OverallIncomplete:
		return 1
	}
	return 0
}

// EntryRank orders entry verdicts for the diff: a move down is a regression
// (passed → flaky, flaky → failed, passed → not measured …).
func EntryRank(v rubric.Verdict) int {
	switch v {
	case rubric.Passed:
		return 4
	case rubric.NotMeasured:
		return 3
	case rubric.HarnessError:
		return 2
	case rubric.Flaky:
		return 1
	}
	return 0
}

func figureUnit(name string) string {
	switch {
	case strings.HasSuffix(name, "_ms"):
		return "ms"
	case strings.HasSuffix(name, "_bytes"):
		return "bytes"
	}
	return "count"
}

// Figures collects a bundle's latency and cost figures, keyed
// "<run>/<figure>": from each subject run (wall clock, the subject's own
// duration and step durations, the sandbox's lifespan and command time from
// the audit), the latencies the recording proxy saw (ProxyLatencies:
// create→ready, delete, command round trips) and the measured cost figures
// (evidence/cost/*.json).
func Figures(dir string) (map[string]float64, map[string]bool) {
	out := map[string]float64{}
	runs := map[string]bool{}
	rs, _ := report.ReadRuns(dir)
	for _, r := range rs {
		runs[r.Key] = true
		if !r.Start.IsZero() && r.End.After(r.Start) {
			out[r.Key+"/subject_wall_clock_ms"] = float64(r.End.Sub(r.Start).Milliseconds())
		}
		var cmd float64
		for _, s := range r.Steps {
			out[r.Key+"/step_"+s.Name+"_ms"] += float64(s.DurationMs)
			cmd += float64(s.DurationMs)
		}
		if len(r.Steps) > 0 {
			out[r.Key+"/commands_ms"] = cmd
		}
		for i, s := range r.Sandboxes {
			if !s.Created.IsZero() && s.Deleted.After(s.Created) {
				out[fmt.Sprintf("%s/sandbox%d_lifespan_ms", r.Key, i+1)] = float64(s.Deleted.Sub(s.Created).Milliseconds())
			}
		}
		out[r.Key+"/sandboxes_created"] = float64(len(r.Sandboxes))
	}
	for k, v := range ProxyLatencies(dir) {
		out[k] = v
	}
	files, _ := filepath.Glob(filepath.Join(dir, report.EvidenceDir, "cost", "*.json"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		base := "cost/" + strings.TrimSuffix(filepath.Base(f), ".json")
		for k, v := range m {
			if n, ok := v.(float64); ok {
				out[base+"/"+k] = n
			}
		}
	}
	return out, runs
}

func minusKeys(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func clipLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n… %d more lines", len(lines)-n)
}

// Write prints the comparison for people.
func Write(w io.Writer, c Comparison, o Options) {
	if c.RubricChange != nil {
		fmt.Fprintf(w, "!!! NOT COMPARABLE: %s; compared anyway (--across-rubrics) !!!\n\n", c.RubricChange.Error())
	}
	fmt.Fprintf(w, "old: %s\nnew: %s\n\n", inert.Line(c.Old), inert.Line(c.New))
	fmt.Fprintf(w, "verdict: %s → %s\n", c.OldVerdict, c.NewVerdict)
	fmt.Fprintf(w, "score:   %s of %s measured → %s of %s measured\n", rubric.Num(c.OldScore.Earned), rubric.Num(c.OldScore.Measured),
		rubric.Num(c.NewScore.Earned), rubric.Num(c.NewScore.Measured))
	if len(c.Entries) == 0 {
		fmt.Fprintln(w, "\nentries: no verdict changed")
	} else {
		fmt.Fprintln(w, "\nentries that changed verdict:")
		for _, e := range c.Entries {
			mark := "  "
			if e.Regression {
				mark = "! "
			}
			fmt.Fprintf(w, "%s%-15s %s → %s\n", mark, e.ID, e.Old, e.New)
			if e.NewReason != "" && e.NewReason != e.OldReason {
				fmt.Fprintf(w, "    now: %s\n", inert.Line(e.NewReason))
			}
		}
	}
	fmt.Fprintf(w, "\nlatency and cost figures (%d compared; threshold %s%%, floor %s ms / %s bytes):\n", c.FiguresCompared,
		rubric.Num(o.Threshold*100), rubric.Num(o.FloorMs), rubric.Num(o.FloorBytes))
	if len(c.Figures) == 0 {
		fmt.Fprintln(w, "  none moved beyond the threshold")
	}
	for _, f := range c.Figures {
		mark, word := "  ", "improved"
		if f.Regression {
			mark, word = "! ", "regressed"
		}
		pct := "n/a"
		if f.Old > 0 {
			pct = fmt.Sprintf("%+.0f%%", (f.New-f.Old)/f.Old*100)
		}
		fmt.Fprintf(w, "%s%-45s %s → %s %s (%s, %s)\n", mark, inert.Line(f.Name), rubric.Num(f.Old), rubric.Num(f.New), f.Unit, pct, word)
	}
	if len(c.OnlyInOld)+len(c.OnlyInNew) > 0 {
		fmt.Fprintf(w, "  subject runs only in old: %s; only in new: %s\n", inert.Line(strings.Join(c.OnlyInOld, ", ")), inert.Line(strings.Join(c.OnlyInNew, ", ")))
	}
	if len(c.Drift) == 0 {
		fmt.Fprintln(w, "\nevidence drift: none (normalised evidence is the same)")
	} else {
		fmt.Fprintln(w, "\nevidence drift (normalised evidence differs; informational):")
		for _, d := range c.Drift {
			fmt.Fprintf(w, "  %s\n", inert.Line(string(d.ID)))
			for _, l := range strings.Split(d.Diff, "\n") {
				fmt.Fprintf(w, "    %s\n", inert.Line(l))
			}
		}
	}
	if c.Regressed() {
		fmt.Fprintf(w, "\nREGRESSION: %s\n", inert.Line(strings.Join(c.Regressions, "; ")))
	} else {
		fmt.Fprintln(w, "\nno regression")
	}
}
