package review

import (
	"bufio"
	"errors"
	"fmt"
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
	for _, id := range o.Overrides {
		r, ok := entryRow(d, id)
		w, feeds := report.EntryWeights(d)[id]
		if !ok || !feeds {
			return nil, fmt.Errorf("--override %s: no such entry in this bundle's score (known: %s)", id, knownEntries(d))
		}
		mv, mcat, mreason := r.MeasuredPart()
		items = append(items, Item{Key: "entries." + string(id), ID: id, Title: r.Title + " (override)", Weight: w.Weight,
			Measured: mv, Category: mcat, Reason: firstNonEmpty(mreason, r.Reason), Evidence: r.Evidence, Items: w.Items,
			Covers: "an override replaces what the harness measured; say exactly why the measurement is wrong"})
	}
	overrideSet := map[rubric.ID]bool{}
	for _, id := range o.Overrides {
		overrideSet[id] = true
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

	fmt.Fprintf(out, "Reviewing %s: run %s, subject %s\n", dir, d.RunID, d.Subject)
	fmt.Fprintf(out, "Measured by the harness: %s, %s of %s measured (measured %s of %s)\n", d.Verdict,
		rubric.Num(d.Score.Earned), rubric.Num(d.Score.Measured), rubric.Num(d.Score.Measured), rubric.Num(d.Score.Total))
	if len(items) == 0 {
		fmt.Fprintln(out, "Nothing in this bundle awaits a reviewer (no reviewer-judgement entry was recorded by the run).")
	}
	answered := 0
	for _, it := range items {
		if isAnswered(j, it) {
			answered++
		}
	}
	if answered > 0 && !o.Redo {
		fmt.Fprintf(out, "%d of %d already judged (saved in %s); continuing with the rest (--redo revisits them).\n", answered, len(items), report.ReviewFile)
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
		if isAnswered(j, it) && !o.Redo && !overrideSet[it.ID] {
			continue
		}
		printItem(out, i+1, len(items), it)
		for {
			a, err := askItem(out, ask, j, it, overrideSet[it.ID])
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
			if !isAnswered(j, it) {
				left++
			}
		}
		fmt.Fprintf(out, "Review paused: %d of %d items still to judge; run `acceptance review %s` again to continue.\n", left, len(items), dir)
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
		if it.Reason != "" {
			fmt.Fprintf(out, ": %s", it.Reason)
		}
		fmt.Fprintln(out)
		for _, e := range it.Evidence {
			fmt.Fprintf(out, "  evidence: %s\n", e)
		}
	}
	fmt.Fprintf(out, "  a good answer covers: %s\n", it.Covers)
}

func askItem(out io.Writer, ask func(string, string) (string, error), j *report.Judgments, it Item, override bool) (Answer, error) {
	var prev report.Judgment
	var had bool
	if it.Question > 0 {
		prev, had = j.Questions[it.Question]
	} else {
		prev, had = j.Entries[it.ID]
	}
	defV := "passed"
	if had {
		defV = string(prev.Verdict)
	}
	var a Answer
	v, err := ask("Verdict (passed/failed)", defV)
	if err != nil {
		return a, err
	}
	a.Verdict = v
	defP := rubric.Num(it.Weight)
	if v == string(rubric.Failed) {
		defP = "0"
	}
	if had && v == string(prev.Verdict) {
		defP = rubric.Num(prev.Points)
	}
	for {
		p, err := ask(fmt.Sprintf("Points (0–%s)", rubric.Num(it.Weight)), defP)
		if err != nil {
			return a, err
		}
		f, perr := strconv.ParseFloat(p, 64)
		if perr == nil {
			a.Points = &f
			break
		}
		fmt.Fprintf(out, "  %q is not a number\n", p)
	}
	if a.Note, err = ask("Note", prev.Note); err != nil {
		return a, err
	}
	if override {
		if a.OverrideReason, err = ask("Override reason (required)", prev.OverrideReason); err != nil {
			return a, err
		}
	}
	return a, nil
}
