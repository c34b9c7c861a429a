package review

import (
	"fmt"
	"sort"
	"strings"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Item is one thing a reviewer judges: a reviewer-judgement entry or a
// defense question.
type Item struct {
	Key      string    // "entries.cost" or "questions.3"
	ID       rubric.ID // the entry (M5 for questions)
	Question int       // 1–15 for a defense question, else 0
	Title    string
	Weight   float64 // the most points it can earn
	// Measured is what the harness recorded for the entry.
	Measured rubric.Verdict
	Category rubric.Category
	Reason   string
	Evidence []string
	Items    []rubric.ID
	// Covers says in one line what a good answer covers.
	Covers string
	// Override: an entry the harness measured, offered to the reviewer only
	// to override it (`acceptance review --override ID`).
	Override bool
}

// Covers is the one-line guide for a reviewer-judgement entry: its
// ReviewGuide in the rubric, else what the reviewer judges, else its statement.
func Covers(id rubric.ID) string {
	if e, ok := rubric.Course.Get(id); ok {
		switch {
		case e.ReviewGuide != "":
			return e.ReviewGuide
		case e.ReviewerJudgment != "":
			return e.ReviewerJudgment
		}
		return e.Statement
	}
	return ""
}

// Items lists what a reviewer judges in this bundle, in report order: every
// reviewable entry (report.EntryRow.Reviewable) that feeds the score, and
// after M5 the 15 defense questions.
func Items(d report.Document) []Item {
	weights := report.EntryWeights(d)
	var out []Item
	for _, r := range d.AllEntries() {
		w, ok := weights[r.ID]
		if !ok || !r.Reviewable() {
			continue
		}
		mv, mcat, mreason := r.MeasuredPart()
		it := Item{Key: "entries." + string(r.ID), ID: r.ID, Title: r.Title, Weight: w.Weight, Measured: mv, Category: mcat,
			Reason: firstNonEmpty(mreason, r.Reason), Evidence: r.Evidence, Items: w.Items, Covers: Covers(r.ID)}
		demo, qw := rubric.M5Split(w.Weight)
		if r.ID == rubric.M5 {
			it.Weight = demo
			it.Title += " (the demonstration; the defense questions follow)"
		}
		out = append(out, it)
		if r.ID == rubric.M5 {
			for _, q := range rubric.DefenseQuestions {
				out = append(out, Item{Key: fmt.Sprintf("questions.%d", q.N), ID: rubric.M5, Question: q.N,
					Title: fmt.Sprintf("Defense question %d: %s", q.N, q.Question), Weight: qw, Measured: mv, Category: mcat,
					Items: w.Items, Covers: q.Covers})
			}
		}
	}
	return out
}

// entryRow finds an entry row in the document.
func entryRow(d report.Document, id rubric.ID) (report.EntryRow, bool) {
	for _, r := range d.AllEntries() {
		if r.ID == id {
			return r, true
		}
	}
	return report.EntryRow{}, false
}

func knownEntries(d report.Document) string {
	w := report.EntryWeights(d)
	var ids []string
	for _, r := range d.AllEntries() {
		if _, ok := w[r.ID]; ok {
			ids = append(ids, string(r.ID))
		}
	}
	sort.Strings(ids)
	return strings.Join(ids, ", ")
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
