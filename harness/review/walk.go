package review

import (
	"bufio"
	"errors"
	"fmt"
	"github.com/osb-capstone/acceptance/harness/inert"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// WalkOptions tune the interactive review.
type WalkOptions struct {
	// Reviewer is the default reviewer name (else the saved one, else $USER).
	Reviewer string
	// Redo revisits items already judged (their answers are the defaults).
	Redo bool
	// Overrides adds entries the harness measured, to override them (a
	// reason is required).
	Overrides []rubric.ID
	// Now is the clock (tests); time.Now if nil.
	Now func() time.Time
}

// errPaused: the input ended before every item was judged.
var errPaused = errors.New("paused")

// Walk reviews the bundle in the terminal: for every reviewer item it shows
// the measured verdict, the evidence and what a good answer covers, and
// prompts for verdict, points and note (Enter takes the default in
// brackets). Every answer is validated with the same rules as an answers
// file and saved to review.json at once, so a walk that is interrupted (end
// of input, Ctrl-D) resumes where it stopped. The bundle is re-rendered at
// the end, also after a pause.
func Walk(dir string, in io.Reader, out io.Writer, o WalkOptions) (*report.Final, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	d, err := report.ReadDocument(dir)
	if err != nil {
		return nil, noReport(dir, err)
	}
	j, err := Load(dir)
	if err != nil {
		return nil, err
	}
	items := Items(d)
	weights := report.EntryWeights(d)
	overrideSet := map[rubric.ID]bool{}
	for _, id := range o.Overrides {
		r, ok := entryRow(d, id)
		w, feeds := weights[id]
		if !ok || !feeds {
			return nil, fmt.Errorf("--override %s: no such entry in this bundle's score (known: %s)", id, knownEntries(d))
		}
		mv, mcat, mreason := r.MeasuredPart()
		switch {
		case mv == rubric.NotMeasured && mcat == rubric.CategoryTimeout:
			return nil, fmt.Errorf("--override %s: the harness's measurement timed out (%s); a timeout never earns points and cannot be overridden: re-run", id, mreason)
		case mv == rubric.HarnessError:
			return nil, fmt.Errorf("--override %s: the harness failed to measure it (%s); a harness error cannot be overridden: re-run", id, mreason)
		}
		if r.Reviewable() {
			// Already an item: a measured failure (or flaky) of it is
			// offered as an override anyway; anything else is judged.
			if mv != rubric.Failed && mv != rubric.Flaky {
				return nil, fmt.Errorf("--override %s: %s has no measured failure (nor flaky measurement) to override; it is judged in the review without one", id, id)
			}
			overrideSet[id] = true
			continue
		}
		if r.Verdict == rubric.NotMeasured && r.Category == "" {
			return nil, fmt.Errorf("--override %s: nothing measured %s in this run (%s); re-run with its scenarios rather than overriding", id, id, r.Reason)
		}
		overrideSet[id] = true
		items = append(items, Item{Key: "entries." + string(id), ID: id, Title: r.Title + " (override)", Weight: w.Weight,
			Measured: mv, Category: mcat, Reason: firstNonEmpty(mreason, r.Reason), Evidence: r.Evidence, Items: w.Items,
			Covers: "an override replaces what the harness measured; say exactly why the measurement is wrong", Override: true})
	}
	br := bufio.NewReader(in)
	ask := func(prompt, def string) (string, error) {
		if def != "" {
			fmt.Fprintf(out, "  %s [%s]: ", prompt, def)
		} else {
			fmt.Fprintf(out, "  %s: ", prompt)
		}
		line, err := br.ReadString('\n')
		if err != nil && (line == "" || !errors.Is(err, io.EOF)) {
			fmt.Fprintln(out)
			return "", errPaused
		}
		line = strings.TrimSpace(line)
		if line == "" {
			return def, nil
		}
		return line, nil
	}

	fmt.Fprintf(out, "Reviewing %s: run %s, subject %s\n", inert.Line(dir), inert.Line(d.RunID), inert.Line(d.Subject))
	fmt.Fprintf(out, "Measured by the harness: %s, %s of %s measured (measured %s of %s)\n", d.Verdict,
		rubric.Num(d.Score.Earned), rubric.Num(d.Score.Measured), rubric.Num(d.Score.Measured), rubric.Num(d.Score.Total))
	if len(items) == 0 {
		fmt.Fprintln(out, "Nothing in this bundle awaits a reviewer (no reviewer-judgement entry was recorded by the run).")
	}
	answered, open := 0, 0
	for _, it := range items {
		if _, closed := closedItem(it); closed {
			continue
		}
		open++
		if isAnswered(j, it) {
			answered++
		}
	}
	if answered > 0 && !o.Redo {
		fmt.Fprintf(out, "%d of %d already judged (saved in %s); continuing with the rest (--redo revisits them).\n", answered, open, report.ReviewFile)
	}
	reviewer := firstNonEmpty(o.Reviewer, j.Reviewer, os.Getenv("USER"))
	paused := false
	for {
		r, err := ask("Reviewer", reviewer)
		if err != nil {
			paused = true
			break
		}
		if r != "" {
			reviewer = r
			break
		}
		fmt.Fprintln(out, "  a reviewer name is required")
	}
	for i, it := range items {
		if paused {
			break
		}
		why, closed := closedItem(it)
		if closed {
			switch it.Question {
			case 0:
				printItem(out, i+1, len(items), it)
				fmt.Fprintf(out, "  not open to review: %s\n", inert.Line(why))
			case 1:
				fmt.Fprintf(out, "\n[%d–%d/%d] questions.1–%d: not open to review: %s\n", i+1, i+len(rubric.DefenseQuestions), len(items), len(rubric.DefenseQuestions), inert.Line(why))
			}
			continue
		}
		if isAnswered(j, it) && !o.Redo && !overrideSet[it.ID] {
			continue
		}
		m := modeOf(it)
		printItem(out, i+1, len(items), it)
		printMode(out, it, m)
		for {
			a, err := askItem(out, ask, j, it, m, weights[it.ID].Weight)
			if err != nil {
				paused = true
				break
			}
			ans := Answers{Reviewer: reviewer}
			if it.Question > 0 {
				ans.Questions = map[int]Answer{it.Question: a}
			} else {
				ans.Entries = map[string]Answer{string(it.ID): a}
			}
			nj, verr := Validate(d, ans, o.Now().UTC())
			if verr != nil {
				fmt.Fprintf(out, "  not recorded: %v\n", strings.ReplaceAll(verr.Error(), "\n", "; "))
				continue
			}
			j = Merge(j, nj)
			if err := Save(dir, j); err != nil {
				return nil, err
			}
			fmt.Fprintf(out, "  saved.\n")
			break
		}
	}
	if paused {
		left := 0
		for _, it := range items {
			if _, closed := closedItem(it); !closed && !isAnswered(j, it) {
				left++
			}
		}
		fmt.Fprintf(out, "Review paused: %d of %d items still to judge; run `acceptance review %s` again to continue.\n", left, open, inert.Line(dir))
	}
	if j.Reviewer == "" {
		j.Reviewer = reviewer
	}
	return Render(dir, d, j)
}

func isAnswered(j *report.Judgments, it Item) bool {
	if it.Question > 0 {
		_, ok := j.Questions[it.Question]
		return ok
	}
	_, ok := j.Entries[it.ID]
	return ok
}

func printItem(out io.Writer, n, total int, it Item) {
	fmt.Fprintf(out, "\n[%d/%d] %s: %s (up to %s points", n, total, it.Key, it.Title, rubric.Num(it.Weight))
	if len(it.Items) > 0 {
		var s []string
		for _, x := range it.Items {
			s = append(s, string(x))
		}
		fmt.Fprintf(out, ", scoring item %s", strings.Join(s, ", "))
	}
	fmt.Fprintln(out, ")")
	m := string(it.Measured)
	if it.Category != "" {
		m += " (" + string(it.Category) + ")"
	}
	if it.Question == 0 {
		fmt.Fprintf(out, "  measured: %s", m)
		if r := reasonAfter(it.Measured, it.Reason); r != "" {
			fmt.Fprintf(out, ": %s", inert.Line(r))
		}
		fmt.Fprintln(out)
		for _, e := range it.Evidence {
			fmt.Fprintf(out, "  evidence: %s\n", inert.Line(e))
		}
	}
	fmt.Fprintf(out, "  a good answer covers: %s\n", it.Covers)
}

// mode is how an item is asked: only what validation accepts is offered.
type mode int

const (
	// modeJudge: a reviewer part, judged freely within its weight.
	modeJudge mode = iota
	// modeMeasuredBad: a reviewer entry whose measured part failed or was
	// flaky: failed with 0 points confirms it, passed overrides it and needs
	// a reason at once.
	modeMeasuredBad
	// modeOverride: an entry the harness measured (--override): the reason
	// comes first, then the verdict.
	modeOverride
)

func modeOf(it Item) mode {
	switch {
	case it.Override:
		return modeOverride
	case it.Question == 0 && (it.Measured == rubric.Failed || it.Measured == rubric.Flaky):
		return modeMeasuredBad
	}
	return modeJudge
}

// closedItem says why an item cannot be judged at all (Validate refuses
// every answer to it), so the walk shows it and moves on.
func closedItem(it Item) (string, bool) {
	timeout := it.Measured == rubric.NotMeasured && it.Category == rubric.CategoryTimeout
	switch {
	case it.Question > 0 && (it.Measured == rubric.Failed || it.Measured == rubric.Flaky || it.Measured == rubric.HarnessError || timeout):
		return fmt.Sprintf("M5's measured part is %s, so the 15 defense questions earn nothing; an override of M5 (its own prompt) sets the points of the whole entry, questions included", measuredWord(it)), true
	case it.Question == 0 && timeout:
		return fmt.Sprintf("the harness's measurement timed out (%s); a timeout never earns points and cannot be judged or overridden: re-run", it.Reason), true
	case it.Question == 0 && it.Measured == rubric.HarnessError:
		return fmt.Sprintf("the harness failed to measure it (%s); a harness error cannot be judged or overridden: re-run", it.Reason), true
	}
	return "", false
}

func measuredWord(it Item) string {
	if it.Measured == rubric.NotMeasured && it.Category != "" {
		return string(it.Category)
	}
	return string(it.Measured)
}

// printMode says up front what the item accepts.
func printMode(out io.Writer, it Item, m mode) {
	switch m {
	case modeMeasuredBad:
		fmt.Fprintf(out, "  the harness measured it %s: it earns nothing unless you override the measurement with a recorded reason (shown as an override).\n", it.Measured)
		fmt.Fprintf(out, "  Answer failed to confirm the measurement (0 points), or passed to override it (the reason is asked next).\n")
	case modeOverride:
		fmt.Fprintf(out, "  an override replaces the harness's measured %s; it needs a recorded reason and is shown as an override.\n", measuredWord(it))
	}
}

func askItem(out io.Writer, ask func(string, string) (string, error), j *report.Judgments, it Item, m mode, fullWeight float64) (Answer, error) {
	var prev report.Judgment
	var had bool
	if it.Question > 0 {
		prev, had = j.Questions[it.Question]
	} else {
		prev, had = j.Entries[it.ID]
	}
	var a Answer
	askReason := func() error {
		for {
			r, err := ask("Override reason (required: why the measurement is wrong)", prev.OverrideReason)
			if err != nil {
				return err
			}
			if r != "" {
				a.OverrideReason = r
				return nil
			}
			fmt.Fprintln(out, "  an override needs a recorded reason")
		}
	}
	if m == modeOverride {
		if err := askReason(); err != nil {
			return a, err
		}
	}
	defV := "passed"
	switch {
	case had:
		defV = string(prev.Verdict)
	case m == modeMeasuredBad:
		defV = string(rubric.Failed)
	case m == modeOverride && it.Measured == rubric.Passed:
		defV = string(rubric.Failed)
	}
	prompt := "Verdict (passed/failed)"
	if m == modeMeasuredBad {
		prompt = "Verdict (failed confirms the measurement; passed overrides it)"
	}
	for {
		v, err := ask(prompt, defV)
		if err != nil {
			return a, err
		}
		if v == string(rubric.Passed) || v == string(rubric.Failed) {
			a.Verdict = v
			break
		}
		fmt.Fprintf(out, "  %q is not passed or failed\n", v)
	}
	limit := it.Weight
	if m != modeJudge {
		limit = fullWeight // an override sets the whole entry's points (M5: the questions too)
	}
	if m == modeMeasuredBad && a.Verdict == string(rubric.Passed) {
		if err := askReason(); err != nil {
			return a, err
		}
	}
	if m == modeMeasuredBad && a.Verdict == string(rubric.Failed) {
		zero := 0.0
		a.Points = &zero
		fmt.Fprintf(out, "  points: 0 (a measured %s earns nothing without an override)\n", it.Measured)
	} else {
		defP := rubric.Num(limit)
		if a.Verdict == string(rubric.Failed) {
			defP = "0"
		}
		if had && a.Verdict == string(prev.Verdict) {
			defP = rubric.Num(prev.Points)
		}
		for {
			p, err := ask(fmt.Sprintf("Points (0–%s)", rubric.Num(limit)), defP)
			if err != nil {
				return a, err
			}
			f, perr := strconv.ParseFloat(p, 64)
			switch {
			case perr != nil:
				fmt.Fprintf(out, "  %q is not a number\n", p)
			case f < 0:
				fmt.Fprintf(out, "  %s is negative\n", p)
			case rubric.PointsExceed(f, limit):
				fmt.Fprintf(out, "  %s exceeds the entry's weight %s\n", p, rubric.Num(limit))
			default:
				a.Points = &f
			}
			if a.Points != nil {
				break
			}
		}
	}
	defN := ""
	if had && a.Verdict == string(prev.Verdict) {
		defN = prev.Note
	}
	if defN == "" && m == modeMeasuredBad && a.Verdict == string(rubric.Failed) {
		defN = "confirmed the measured " + string(it.Measured) + reasonSuffix(reasonAfter(it.Measured, it.Reason))
	}
	for {
		n, err := ask("Note", defN)
		if err != nil {
			return a, err
		}
		if n == "" && a.Verdict == string(rubric.Failed) && it.Question == 0 {
			fmt.Fprintln(out, "  a failed verdict needs a note saying what the submission did")
			continue
		}
		a.Note = n
		return a, nil
	}
}

// reasonAfter drops a reason's leading "<verdict>: " (a flaky reason starts
// with "flaky: "), so "measured: flaky: …" does not say it twice.
func reasonAfter(v rubric.Verdict, reason string) string {
	return strings.TrimPrefix(reason, string(v)+": ")
}
