// Package upgradecheck runs and judges `acceptance upgrade-check`: one
// subject graded on the docker target against two server versions,
// interleaved, then compared (verdicts, evidence drift, latency against the
// spread within each version). cmd/acceptance parses the flags.
package upgradecheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/dockertarget"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/compare"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Config is one upgrade check, as `acceptance upgrade-check`'s flags name
// it (cmd/acceptance parses and validates them).
type Config struct {
	From, To string
	Rounds   int    // runs per version, interleaved A B A B …
	Tags     string // godog tag expression passed to each run ("" = the full suite)
	Subject  string // the subject graded in every run (as run --subject)
	Out      string // the runs' bundles and upgrade-check.{md,json}
	Seed     int64  // scenario order seed shared by every run
	RunArgs  []string
	Options  compare.Options // how latency figures are judged
	Self     string          // the acceptance binary each run executes
}

// Check is `acceptance upgrade-check --from A --to B`: the
// reference (or --subject) graded on the docker target against server
// version A and B, interleaved A B A B … (--rounds each), then compared:
// verdicts and evidence drift (compare.Compare of each side's first run),
// verdicts that differ between rounds of one version (unstable), and every
// latency figure's median and spread per version. A latency change is a
// regression only when the medians differ by more than the spread seen
// within either version (and by more than the threshold and floor); with
// one run per side timing is not judged. Exit 1 on a regression, 2 when a
// run could not complete (a version whose control plane does not start is
// reported with its classified failure).
func Check(ctx context.Context, c Config, stdout, stderr io.Writer) int {
	from, to, rounds, tags, subject, out, seed, runArgs, self := &c.From, &c.To, &c.Rounds, &c.Tags, &c.Subject, &c.Out, &c.Seed, c.RunArgs, c.Self
	res := upgradeResult{From: *from, To: *to, Rounds: *rounds, Seed: *seed, Tags: *tags, Subject: *subject}
rounds:
	for i := 1; i <= *rounds; i++ {
		for _, v := range []string{*from, *to} {
			dir := filepath.Join(*out, fmt.Sprintf("%s-run%d", v, i))
			argv := []string{"run", "--target", "docker", "--server-version", v, "--seed", fmt.Sprint(*seed), "--subject", *subject, "--out", dir}
			if *tags != "" {
				argv = append(argv, "--tags", *tags)
			}
			argv = append(argv, runArgs...)
			fmt.Fprintf(stderr, "upgrade-check: round %d/%d, opensandbox-server==%s → %s\n", i, *rounds, v, dir)
			t0 := time.Now()
			cmd := exec.CommandContext(ctx, self, argv...)
			var log strings.Builder
			cmd.Stdout, cmd.Stderr = io.MultiWriter(stderr, &log), io.MultiWriter(stderr, &log)
			err := cmd.Run()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				code = 2
			}
			r := upgradeRun{Version: v, Round: i, Dir: dir, Exit: code, Seconds: time.Since(t0).Seconds()}
			if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
				r.Failure = startFailureOf(log.String())
			}
			res.Runs = append(res.Runs, r)
			if ctx.Err() != nil {
				fmt.Fprintln(stderr, "upgrade-check: interrupted")
				return 2
			}
			if r.Failure != "" && !classifiedStartFailure(r.Failure) {
				// Not a version's own start failure (the engine is busy or
				// missing, a usage error): every further run would fail alike.
				fmt.Fprintf(stderr, "upgrade-check: stopping: %s\n", r.Failure)
				res.Stopped = "stopped after opensandbox-server==" + v + fmt.Sprintf(" round %d: ", i) + r.Failure
				break rounds
			}
		}
	}
	res.judge(c.Options)
	return res.write(*out, stdout)
}

func (r *upgradeResult) write(dir string, stdout io.Writer) int {
	md := r.markdown()
	_ = os.WriteFile(filepath.Join(dir, "upgrade-check.md"), []byte(md), 0o644)
	if b, err := json.MarshalIndent(r, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "upgrade-check.json"), b, 0o644)
	}
	fmt.Fprint(stdout, md)
	return r.Exit
}

// Rejudge judges an earlier check's runs (its directory) again, without
// running anything, e.g. with another threshold.
func Rejudge(dir string, o compare.Options, stdout, stderr io.Writer) int {
	b, err := os.ReadFile(filepath.Join(dir, "upgrade-check.json"))
	var old upgradeResult
	if err == nil {
		err = json.Unmarshal(b, &old)
	}
	if err != nil {
		fmt.Fprintf(stderr, "acceptance upgrade-check: --judge %s: %v\n", dir, err)
		return 2
	}
	r := upgradeResult{From: old.From, To: old.To, Rounds: old.Rounds, Seed: old.Seed, Tags: old.Tags, Subject: old.Subject, Runs: old.Runs, Stopped: old.Stopped}
	r.judge(o)
	return r.write(dir, stdout)
}

// classifiedStartFailure: the failure is a version's control plane that
// did not start (a fact about that version, worth showing for each side).
func classifiedStartFailure(f string) bool {
	for _, c := range []string{dockertarget.StartImportFailed, dockertarget.StartConfigRefused, dockertarget.StartEngineRefused} {
		if strings.HasPrefix(f, c) {
			return true
		}
	}
	return false
}

// startFailureOf picks the classified start failure out of a run's output
// ("target failure: opensandbox-server … : <class> …"), or the last lines.
func startFailureOf(log string) string {
	for _, c := range []string{dockertarget.StartImportFailed, dockertarget.StartConfigRefused, dockertarget.StartEngineRefused, dockertarget.StartUnclassified} {
		if strings.Contains(log, c) {
			return c + " (a fault of the target, not of the submission): " + lastLines(log, 6)
		}
	}
	return "the run wrote no report: " + lastLines(log, 6)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

type upgradeRun struct {
	Version string  `json:"version"`
	Round   int     `json:"round"`
	Dir     string  `json:"dir"`
	Exit    int     `json:"exit"`
	Seconds float64 `json:"seconds"`
	Failure string  `json:"failure,omitempty"` // no report: why (a start failure classified)
}

// FigureJudgement is one latency figure across the rounds of both versions.
type FigureJudgement struct {
	Name           string    `json:"name"`
	Unit           string    `json:"unit"`
	From, To       []float64 `json:"-"`
	FromMedian     float64   `json:"from_median"`
	ToMedian       float64   `json:"to_median"`
	FromSpread     float64   `json:"from_spread"` // max − min within the version's rounds
	ToSpread       float64   `json:"to_spread"`
	Judged         bool      `json:"judged"` // two or more runs per side
	Regression     bool      `json:"regression"`
	Improvement    bool      `json:"improvement"`
	WithinTheNoise bool      `json:"within_the_noise"`
}

type upgradeResult struct {
	From, To        string
	Rounds          int
	Seed            int64
	Tags, Subject   string
	Runs            []upgradeRun
	VerdictsFrom    []string // each run's overall verdict
	VerdictsTo      []string
	EntryChanges    []compare.EntryChange
	Drift           []compare.EvidenceDrift
	Unstable        []string // entries whose verdict differed between rounds of one version
	Figures         []FigureJudgement
	TimingJudged    bool
	TimingNote      string
	Regressions     []string
	Incomplete      []string
	Stopped         string `json:",omitempty"`
	Exit            int
	FiguresCompared int
}

// judge fills the comparison from the runs' bundles.
func (r *upgradeResult) judge(o compare.Options) {
	var fromDirs, toDirs []string
	for _, run := range r.Runs {
		if run.Failure != "" || run.Exit == 2 {
			why := run.Failure
			if why == "" {
				why = fmt.Sprintf("exit %d (harness error or aborted run)", run.Exit)
			}
			r.Incomplete = append(r.Incomplete, fmt.Sprintf("opensandbox-server==%s round %d: %s", run.Version, run.Round, why))
		}
		if run.Failure != "" {
			continue
		}
		d, err := report.ReadDocument(run.Dir)
		if err != nil {
			r.Incomplete = append(r.Incomplete, fmt.Sprintf("opensandbox-server==%s round %d: %v", run.Version, run.Round, err))
			continue
		}
		if run.Version == r.From {
			fromDirs = append(fromDirs, run.Dir)
			r.VerdictsFrom = append(r.VerdictsFrom, string(d.Verdict))
		} else {
			toDirs = append(toDirs, run.Dir)
			r.VerdictsTo = append(r.VerdictsTo, string(d.Verdict))
		}
	}
	if len(r.Incomplete) > 0 {
		r.Exit = 2
	}
	if len(fromDirs) == 0 || len(toDirs) == 0 {
		r.TimingNote = "nothing to compare: a version has no completed run"
		r.Exit = 2
		return
	}
	// Evidence drift and the entries that changed: the first completed run
	// of each side. A regression, like a latency one, must hold beyond the
	// variation within each version: an entry (or the overall verdict, or
	// the score) regressed only when every run of the new version is worse
	// than every run of the old one; an entry whose verdict differs between
	// rounds of one version is listed as unstable instead.
	c, err := compare.Compare(fromDirs[0], toDirs[0], compare.Options{Threshold: math.Inf(1), FloorMs: math.Inf(1), FloorBytes: math.Inf(1)})
	if err == nil {
		r.EntryChanges, r.Drift = c.Entries, c.Drift
	}
	r.Regressions = append(r.Regressions, verdictRegressions(fromDirs, toDirs)...)
	r.Unstable = append(unstableEntries(fromDirs, r.From), unstableEntries(toDirs, r.To)...)
	var fromFigs, toFigs []map[string]float64
	for _, d := range fromDirs {
		f, _ := compare.Figures(d)
		fromFigs = append(fromFigs, f)
	}
	for _, d := range toDirs {
		f, _ := compare.Figures(d)
		toFigs = append(toFigs, f)
	}
	r.Figures = JudgeFigures(fromFigs, toFigs, o)
	r.FiguresCompared = len(r.Figures)
	r.TimingJudged = len(fromDirs) >= 2 && len(toDirs) >= 2
	if !r.TimingJudged {
		r.TimingNote = fmt.Sprintf("timing not judged: %d completed run(s) of %s and %d of %s; the spread within a version needs two or more each (--rounds 2)",
			len(fromDirs), r.From, len(toDirs), r.To)
	}
	for _, f := range r.Figures {
		if f.Regression {
			r.Regressions = append(r.Regressions, fmt.Sprintf("%s median %s → %s %s (spread %s / %s)", f.Name,
				rubric.Num(f.FromMedian), rubric.Num(f.ToMedian), f.Unit, rubric.Num(f.FromSpread), rubric.Num(f.ToSpread)))
		}
	}
	if len(r.Regressions) > 0 && r.Exit == 0 {
		r.Exit = 1
	}
}

// verdictRegressions: the overall verdict, the score and each entry, worse
// in every run of the new version than in every run of the old one.
func verdictRegressions(fromDirs, toDirs []string) []string {
	read := func(dirs []string) []report.Document {
		var out []report.Document
		for _, d := range dirs {
			if doc, err := report.ReadDocument(d); err == nil {
				out = append(out, doc)
			}
		}
		return out
	}
	from, to := read(fromDirs), read(toDirs)
	if len(from) == 0 || len(to) == 0 {
		return nil
	}
	var out []string
	worstFrom, bestTo := 99, -1
	minScore, maxScore := math.Inf(1), math.Inf(-1)
	for _, d := range from {
		worstFrom = min(worstFrom, compare.OverallRank(d.Verdict))
		minScore = math.Min(minScore, d.Score.Earned)
	}
	for _, d := range to {
		bestTo = max(bestTo, compare.OverallRank(d.Verdict))
		maxScore = math.Max(maxScore, d.Score.Earned)
	}
	if bestTo < worstFrom {
		out = append(out, fmt.Sprintf("verdict %s → %s in every run", from[0].Verdict, to[0].Verdict))
	}
	if rubric.PointsBelow(maxScore, minScore) {
		out = append(out, fmt.Sprintf("score %s → at most %s in every run", rubric.Num(minScore), rubric.Num(maxScore)))
	}
	ranks := func(docs []report.Document) map[rubric.ID][]int {
		m := map[rubric.ID][]int{}
		for _, d := range docs {
			for _, e := range d.AllEntries() {
				m[e.ID] = append(m[e.ID], compare.EntryRank(e.Verdict))
			}
		}
		return m
	}
	fr, tr := ranks(from), ranks(to)
	var ids []string
	for id := range tr {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	for _, s := range ids {
		id := rubric.ID(s)
		f, t := fr[id], tr[id]
		if len(f) == 0 || len(f) != len(from) || len(t) != len(to) {
			continue
		}
		if slices.Max(t) < slices.Min(f) {
			out = append(out, fmt.Sprintf("%s worse in every run of the new version", id))
		}
	}
	return out
}

// unstableEntries: entries whose verdict differs between runs of one version.
func unstableEntries(dirs []string, version string) []string {
	seen := map[rubric.ID]map[rubric.Verdict]bool{}
	for _, d := range dirs {
		doc, err := report.ReadDocument(d)
		if err != nil {
			continue
		}
		for _, e := range doc.AllEntries() {
			if seen[e.ID] == nil {
				seen[e.ID] = map[rubric.Verdict]bool{}
			}
			seen[e.ID][e.Verdict] = true
		}
	}
	var out []string
	for id, vs := range seen {
		if len(vs) > 1 {
			var names []string
			for v := range vs {
				names = append(names, string(v))
			}
			sort.Strings(names)
			out = append(out, fmt.Sprintf("%s on %s: %s", id, version, strings.Join(names, " / ")))
		}
	}
	sort.Strings(out)
	return out
}

// JudgeFigures compares every figure present in all runs of both versions:
// medians and spreads (max − min) per version. With two or more runs per
// side a rise of the median is a regression only when it exceeds both
// spreads, the floor and the threshold; with fewer nothing is judged.
func JudgeFigures(from, to []map[string]float64, o compare.Options) []FigureJudgement {
	if len(from) == 0 || len(to) == 0 {
		return nil
	}
	var names []string
	for k := range from[0] {
		all := true
		for _, m := range append(append([]map[string]float64{}, from...), to...) {
			if _, ok := m[k]; !ok {
				all = false
				break
			}
		}
		if all {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	judged := len(from) >= 2 && len(to) >= 2
	var out []FigureJudgement
	for _, k := range names {
		f := FigureJudgement{Name: k, Unit: figureUnitOf(k), Judged: judged}
		for _, m := range from {
			f.From = append(f.From, m[k])
		}
		for _, m := range to {
			f.To = append(f.To, m[k])
		}
		f.FromMedian, f.FromSpread = medianSpread(f.From)
		f.ToMedian, f.ToSpread = medianSpread(f.To)
		floor := 1.0
		switch f.Unit {
		case "ms":
			floor = o.FloorMs
		case "bytes":
			floor = o.FloorBytes
		}
		delta := f.ToMedian - f.FromMedian
		noise := math.Max(f.FromSpread, f.ToSpread)
		beyond := math.Abs(delta) > noise && math.Abs(delta) >= floor && math.Abs(delta) > o.Threshold*math.Max(f.FromMedian, 0)
		if judged {
			f.Regression = beyond && delta > 0
			f.Improvement = beyond && delta < 0
			f.WithinTheNoise = !beyond
		}
		out = append(out, f)
	}
	return out
}

func figureUnitOf(name string) string {
	switch {
	case strings.HasSuffix(name, "_ms"):
		return "ms"
	case strings.HasSuffix(name, "_bytes"):
		return "bytes"
	}
	return "count"
}

func medianSpread(xs []float64) (float64, float64) {
	s := append([]float64{}, xs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0, 0
	}
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[n-1] - s[0]
}

func (r *upgradeResult) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Upgrade check: opensandbox-server %s → %s\n\n", r.From, r.To)
	fmt.Fprintf(&b, "Subject %s, seed %d, tags %q, %d round(s) per version, interleaved.\n\n", r.Subject, r.Seed, r.Tags, r.Rounds)
	b.WriteString("| version | round | exit | seconds | bundle |\n|---|---|---|---|---|\n")
	for _, run := range r.Runs {
		dir := run.Dir
		if run.Failure != "" {
			dir = "no report: " + run.Failure
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %.0f | %s |\n", run.Version, run.Round, run.Exit, run.Seconds, dir)
	}
	fmt.Fprintf(&b, "\nVerdicts: %s on %s, %s on %s.\n", strings.Join(r.VerdictsFrom, ", "), r.From, strings.Join(r.VerdictsTo, ", "), r.To)
	if len(r.Incomplete) > 0 {
		writeList(&b, "\n**Incomplete** (target or harness failures, never the subject's):\n", r.Incomplete)
	}
	if len(r.EntryChanges) == 0 {
		b.WriteString("\nEntries: no verdict changed.\n")
	} else {
		b.WriteString("\nEntries that changed verdict between the first run of each side (a regression only if it holds in every run, see below):\n")
		for _, e := range r.EntryChanges {
			fmt.Fprintf(&b, "- %s: %s → %s (now: %s)\n", e.ID, e.Old, e.New, e.NewReason)
		}
	}
	if len(r.Unstable) > 0 {
		writeList(&b, "\nUnstable within a version (differs between rounds):\n", r.Unstable)
	}
	if len(r.Drift) == 0 {
		b.WriteString("\nEvidence: no drift.\n")
	} else {
		b.WriteString("\nEvidence drift:\n")
		for _, d := range r.Drift {
			fmt.Fprintf(&b, "\n%s:\n```diff\n%s\n```\n", d.ID, d.Diff)
		}
	}
	if r.TimingNote != "" {
		b.WriteString("\n" + r.TimingNote + ".\n")
	}
	if len(r.Figures) > 0 {
		fmt.Fprintf(&b, "\nLatency figures (%d in every run): median [spread] per version\n\n", len(r.Figures))
		b.WriteString("| figure | " + r.From + " | " + r.To + " | judgement |\n|---|---|---|---|\n")
		for _, f := range r.Figures {
			j := "not judged"
			switch {
			case f.Regression:
				j = "**regression** (beyond the spread)"
			case f.Improvement:
				j = "improvement (beyond the spread)"
			case f.WithinTheNoise:
				j = "within the noise"
			}
			if f.Unit != "ms" && !f.Regression && !f.Improvement {
				if f.FromMedian == f.ToMedian {
					continue // unchanged counts are not worth a row
				}
			}
			fmt.Fprintf(&b, "| %s | %s [%s] | %s [%s] | %s |\n", f.Name, rubric.Num(f.FromMedian), rubric.Num(f.FromSpread),
				rubric.Num(f.ToMedian), rubric.Num(f.ToSpread), j)
		}
	}
	if r.Stopped != "" {
		b.WriteString("\n**Stopped early:** " + r.Stopped + "\n")
	}
	switch {
	case r.Exit == 2:
		fmt.Fprintf(&b, "\nResult: incomplete, nothing is judged on the missing runs (exit %d).\n", r.Exit)
	case len(r.Regressions) == 0:
		fmt.Fprintf(&b, "\nResult: no regression (exit %d).\n", r.Exit)
	default:
		writeList(&b, "\nRegressions:\n", r.Regressions)
		fmt.Fprintf(&b, "\nResult: regression (exit %d).\n", r.Exit)
	}
	return b.String()
}

// writeList writes a heading and its items as a Markdown list.
func writeList(b *strings.Builder, heading string, items []string) {
	b.WriteString(heading)
	for _, s := range items {
		b.WriteString("- " + s + "\n")
	}
}
