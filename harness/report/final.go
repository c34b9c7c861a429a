package report

import (
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// ReviewFile is the reviewer's judgement inside the bundle (written by
// harness/review). It is kept apart from report.json, whose measured content
// a review never changes; the final score is merged at render time.
const ReviewFile = "review.json"

// Provenance says where an entry's points come from.
type Provenance string

const (
	// ProvMeasured: the harness measured the entry; points follow its verdict.
	ProvMeasured Provenance = "measured"
	// ProvJudged: a reviewer judged the entry's reviewer part (cost, README
	// reproducibility, the demonstration, the defense questions).
	ProvJudged Provenance = "judged"
	// ProvOverride: a reviewer replaced the harness's verdict, with a
	// recorded reason.
	ProvOverride Provenance = "override"
	// ProvPending: awaits a reviewer; no points yet.
	ProvPending Provenance = "pending"
	// ProvNone: not measured (timeout, unsupported, precondition, harness
	// error); earns nothing and a reviewer cannot grant points for it
	// except by an override (never for a timeout or a harness error).
	ProvNone Provenance = "none"
)

// DefenseFraction is the share of M5's weight carried by the 15 defense
// questions (the rest is the demonstration itself).
const DefenseFraction = 0.5

// Judgment is a reviewer's decision on one entry or defense question.
type Judgment struct {
	Verdict        rubric.Verdict `json:"verdict"`
	Points         float64        `json:"points"`
	Note           string         `json:"note,omitempty"`
	Reviewer       string         `json:"reviewer,omitempty"`
	OverrideReason string         `json:"override_reason,omitempty"`
	At             time.Time      `json:"at,omitzero"`
}

// Judgments is a reviewer's input as stored in review.json.
type Judgments struct {
	Reviewer  string                 `json:"reviewer"`
	StartedAt time.Time              `json:"started_at,omitzero"`
	UpdatedAt time.Time              `json:"updated_at,omitzero"`
	Entries   map[rubric.ID]Judgment `json:"entries"`
	// Questions are keyed by the defense question's number (1–15).
	Questions map[int]Judgment `json:"questions"`
}

// Final is the final score out of 100 after review, with the provenance of
// every point. It is rendered into report.md, report.html and results.json,
// never into report.json.
type Final struct {
	Reviewer string `json:"reviewer,omitempty"`
	// Complete is true when every reviewer entry and question is judged.
	Complete bool `json:"complete"`
	// Pending lists what still awaits a reviewer.
	Pending       []string       `json:"pending"`
	Verdict       rubric.Overall `json:"verdict"`
	VerdictReason string         `json:"verdict_reason"`
	Score         float64        `json:"score"`
	Total         float64        `json:"total"`
	// Points by provenance; they sum to Score.
	MeasuredPoints float64         `json:"measured_points"`
	JudgedPoints   float64         `json:"judged_points"`
	OverridePoints float64         `json:"override_points"`
	Items          []FinalItem     `json:"items"`
	Entries        []FinalEntry    `json:"entries"`
	Questions      []FinalQuestion `json:"questions"`
}

// FinalItem is one scoring item's final points.
type FinalItem struct {
	Item   rubric.ID `json:"item"`
	Title  string    `json:"title"`
	Weight int       `json:"weight"`
	Points float64   `json:"points"`
}

// FinalEntry is one graded entry's final points.
type FinalEntry struct {
	ID    rubric.ID   `json:"id"`
	Title string      `json:"title"`
	Items []rubric.ID `json:"items"` // scoring items it feeds
	// Weight is the entry's share of its scoring items (item weight / inputs).
	Weight          float64         `json:"weight"`
	Points          float64         `json:"points"`
	Provenance      Provenance      `json:"provenance"`
	MeasuredVerdict rubric.Verdict  `json:"measured_verdict"`
	Category        rubric.Category `json:"category,omitempty"`
	Verdict         rubric.Verdict  `json:"verdict"` // after review; "pending" when awaiting one
	Reason          string          `json:"reason"`
	Note            string          `json:"note,omitempty"`
	OverrideReason  string          `json:"override_reason,omitempty"`
	Reviewer        string          `json:"reviewer,omitempty"`
	// Reviewable: the entry has a reviewer part (judged, not overridden).
	Reviewable bool `json:"reviewable"`
}

// FinalQuestion is one defense question's judgement.
type FinalQuestion struct {
	N        int            `json:"n"`
	Question string         `json:"question"`
	Covers   string         `json:"covers"`
	Weight   float64        `json:"weight"`
	Points   float64        `json:"points"`
	Verdict  rubric.Verdict `json:"verdict"` // "pending" when unanswered
	Note     string         `json:"note,omitempty"`
}

// VerdictPending marks an entry or question that awaits a reviewer (Final only).
const VerdictPending rubric.Verdict = "pending"

// EntryWeight is an entry's share of the scoring items it feeds, and the items.
type EntryWeight struct {
	Weight float64
	Items  []rubric.ID
	Shares []float64 // per item, in Items order
}

// EntryWeights derives every graded entry's weight from the document's
// scoring table: an item of weight W with n inputs gives each input W/n.
func EntryWeights(d Document) map[rubric.ID]EntryWeight {
	out := map[rubric.ID]EntryWeight{}
	for _, s := range d.Scoring {
		if len(s.Inputs) == 0 {
			continue
		}
		share := float64(s.Weight) / float64(len(s.Inputs))
		for _, in := range s.Inputs {
			w := out[in]
			w.Weight += share
			w.Items = append(w.Items, s.Item)
			w.Shares = append(w.Shares, share)
			out[in] = w
		}
	}
	return out
}

// AllEntries is every criterion, milestone and drill row, in report order.
func (d Document) AllEntries() []EntryRow {
	out := append([]EntryRow{}, d.Criteria...)
	out = append(out, d.Milestones...)
	return append(out, d.Drills...)
}

// ReviewerEntries are the entries the course leaves to a person: the cost
// estimate, whether another person can reproduce the run from the README,
// and M5's demonstration and defense questions.
var ReviewerEntries = []rubric.ID{rubric.Cost, rubric.Maintainability, rubric.M5}

// Reviewable reports whether a reviewer judges the entry in this bundle:
// something recorded a reviewer_judgment outcome for it, and it is one of
// ReviewerEntries or nothing else measured it. An entry the harness measured
// that merely also carries a reviewer note (e.g. M4, whose README scenario
// is judged as maintainability) keeps its measured verdict.
func (r EntryRow) Reviewable() bool {
	if !r.HasReviewerPart() {
		return false
	}
	for _, id := range ReviewerEntries {
		if r.ID == id {
			return true
		}
	}
	for _, o := range r.Outcomes {
		if o.Category != rubric.CategoryReviewerJudgment {
			return false
		}
	}
	return true
}

// HasReviewerPart reports whether something recorded a reviewer_judgment
// outcome for the entry.
func (r EntryRow) HasReviewerPart() bool {
	if r.Category == rubric.CategoryReviewerJudgment {
		return true
	}
	for _, o := range r.Outcomes {
		if o.Category == rubric.CategoryReviewerJudgment {
			return true
		}
	}
	return false
}

// MeasuredPart is the verdict of an entry's outcomes other than the
// reviewer-judgment ones (not_measured/reviewer_judgment if there are none),
// folded with the rubric's rules (rubric.Fold: failed, then flaky, then
// harness error, then timeout, then passed). It is what a reviewer's judgement may not contradict.
func (r EntryRow) MeasuredPart() (rubric.Verdict, rubric.Category, string) {
	var mine []rubric.Outcome
	for i, o := range r.Outcomes {
		if o.Category == rubric.CategoryReviewerJudgment {
			continue
		}
		mine = append(mine, rubric.Outcome{Seq: int64(i + 1), ID: r.ID, Verdict: o.Verdict, Category: o.Category, Reason: o.Reason, Scenario: o.Scenario})
	}
	if len(mine) > 0 {
		return rubric.Fold(mine)
	}
	if len(r.Outcomes) == 0 && r.Category != rubric.CategoryReviewerJudgment {
		return r.Verdict, r.Category, r.Reason
	}
	return rubric.NotMeasured, rubric.CategoryReviewerJudgment, ""
}

// ComputeFinal merges a reviewer's judgments (nil: none yet) into the
// measured document and returns the final score with its provenance. It does
// not validate j (harness/review does); it never lets a reviewer's judgement
// outweigh a measured failure, a timeout or a harness error unless j carries
// an override reason, and it clamps points to [0, weight].
func ComputeFinal(d Document, j *Judgments) *Final {
	if j == nil {
		j = &Judgments{}
	}
	weights := EntryWeights(d)
	f := &Final{Reviewer: j.Reviewer, Pending: []string{}, Items: []FinalItem{}, Entries: []FinalEntry{}, Questions: []FinalQuestion{}}
	itemPoints := map[rubric.ID]float64{}
	finalVerdict := map[rubric.ID]rubric.Verdict{}
	finalCat := map[rubric.ID]rubric.Category{}
	for _, r := range d.AllEntries() {
		w, feeds := weights[r.ID]
		fe := FinalEntry{ID: r.ID, Title: r.Title, Items: w.Items, Weight: round2(w.Weight), MeasuredVerdict: r.Verdict,
			Category: r.Category, Reason: r.Reason, Reviewable: r.Reviewable()}
		if fe.Items == nil {
			fe.Items = []rubric.ID{}
		}
		jd, judged := j.Entries[r.ID]
		mv, mcat, _ := r.MeasuredPart()
		demoWeight := w.Weight
		if r.ID == rubric.M5 {
			demoWeight = w.Weight * (1 - DefenseFraction)
		}
		switch {
		case judged && jd.OverrideReason != "" && !(mv == rubric.NotMeasured && mcat == rubric.CategoryTimeout) && mv != rubric.HarnessError:
			fe.Provenance, fe.Verdict = ProvOverride, jd.Verdict
			fe.Points = clamp(jd.Points, w.Weight)
			fe.OverrideReason, fe.Note, fe.Reviewer = jd.OverrideReason, jd.Note, firstNonEmpty(jd.Reviewer, j.Reviewer)
			fe.Reviewable = false
		case fe.Reviewable && (mv == rubric.Failed || mv == rubric.Flaky || mv == rubric.HarnessError || mcat == rubric.CategoryTimeout):
			// The measured part decides: a reviewer cannot pass what failed
			// (or passed only some of the time).
			fe.Provenance, fe.Verdict, fe.Category = ProvMeasured, mv, mcat
			if mv != rubric.Failed && mv != rubric.Flaky {
				fe.Provenance = ProvNone
			}
		case fe.Reviewable:
			if judged {
				fe.Provenance, fe.Verdict = ProvJudged, jd.Verdict
				fe.Points = clamp(jd.Points, demoWeight)
				fe.Note, fe.Reviewer = jd.Note, firstNonEmpty(jd.Reviewer, j.Reviewer)
			} else {
				fe.Provenance, fe.Verdict = ProvPending, VerdictPending
				f.Pending = append(f.Pending, string(r.ID))
			}
			if r.ID == rubric.M5 {
				qs, pts, pending := computeQuestions(w.Weight*DefenseFraction, j)
				f.Questions = qs
				fe.Points += pts
				if pending > 0 {
					f.Pending = append(f.Pending, pluralQ(pending))
				}
				if fe.Verdict == rubric.Passed && pending > 0 {
					fe.Verdict = VerdictPending
				}
			}
		default:
			fe.Verdict, fe.Provenance = r.Verdict, ProvMeasured
			if r.Verdict == rubric.Passed {
				fe.Points = w.Weight
			}
			if r.Verdict == rubric.NotMeasured || r.Verdict == rubric.HarnessError {
				fe.Provenance = ProvNone
			}
		}
		raw := fe.Points // sums use unrounded points: 6 × 25/6 is 25, not 25.02
		fe.Points = round2(fe.Points)
		finalVerdict[r.ID], finalCat[r.ID] = fe.Verdict, fe.Category
		if !feeds {
			continue
		}
		switch fe.Provenance {
		case ProvMeasured:
			f.MeasuredPoints += raw
		case ProvJudged:
			f.JudgedPoints += raw
		case ProvOverride:
			f.OverridePoints += raw
		}
		for i, it := range w.Items {
			if w.Weight > 0 {
				itemPoints[it] += raw * w.Shares[i] / w.Weight
			}
		}
		f.Entries = append(f.Entries, fe)
	}
	for _, s := range d.Scoring {
		f.Items = append(f.Items, FinalItem{Item: s.Item, Title: s.Title, Weight: s.Weight, Points: round2(itemPoints[s.Item])})
		f.Total += float64(s.Weight)
	}
	f.Score = round2(f.MeasuredPoints + f.JudgedPoints + f.OverridePoints)
	f.MeasuredPoints, f.JudgedPoints, f.OverridePoints = round2(f.MeasuredPoints), round2(f.JudgedPoints), round2(f.OverridePoints)
	f.Complete = len(f.Pending) == 0
	f.Verdict, f.VerdictReason = finalOverall(d, finalVerdict, finalCat, f.Pending)
	return f
}

func computeQuestions(total float64, j *Judgments) ([]FinalQuestion, float64, int) {
	n := len(rubric.DefenseQuestions)
	var out []FinalQuestion
	var pts float64
	pending := 0
	for _, q := range rubric.DefenseQuestions {
		fq := FinalQuestion{N: q.N, Question: q.Question, Covers: q.Covers, Weight: round2(total / float64(n)), Verdict: VerdictPending}
		if a, ok := j.Questions[q.N]; ok {
			fq.Verdict, fq.Note = a.Verdict, a.Note
			fq.Points = round2(clamp(a.Points, total/float64(n)))
			pts += fq.Points
		} else {
			pending++
		}
		out = append(out, fq)
	}
	return out, pts, pending
}

func pluralQ(n int) string {
	if n == 1 {
		return "1 defense question"
	}
	return strconv.Itoa(n) + " defense questions"
}

// finalOverall applies the rubric's overall rules to the final verdicts.
func finalOverall(d Document, v map[rubric.ID]rubric.Verdict, cat map[rubric.ID]rubric.Category, pending []string) (rubric.Overall, string) {
	var errored, unmeasured []string
	var failed, flaky []rubric.ID
	for _, r := range d.AllEntries() {
		switch v[r.ID] {
		case rubric.Failed:
			failed = append(failed, r.ID)
		case rubric.Flaky:
			flaky = append(flaky, r.ID)
		case rubric.HarnessError:
			errored = append(errored, string(r.ID))
		case rubric.NotMeasured:
			if c := cat[r.ID]; c != rubric.CategoryUnsupportedByTarget && c != rubric.CategoryReviewerJudgment {
				unmeasured = append(unmeasured, string(r.ID))
			}
		}
	}
	switch {
	case len(failed) > 0 || len(flaky) > 0:
		return rubric.OverallNotPassed, rubric.NotPassedReason(failed, flaky)
	case d.Aborted != "":
		return rubric.OverallIncomplete, "run aborted: " + d.Aborted
	case len(errored) > 0 || len(unmeasured) > 0:
		var parts []string
		if len(errored) > 0 {
			parts = append(parts, "harness error: "+strings.Join(errored, ", "))
		}
		if len(unmeasured) > 0 {
			parts = append(parts, "measurable on "+string(d.TargetKind)+" but not measured: "+strings.Join(unmeasured, ", "))
		}
		return rubric.OverallIncomplete, strings.Join(parts, "; ")
	case len(pending) > 0:
		return rubric.OverallIncomplete, "awaiting a reviewer: " + strings.Join(pending, ", ")
	}
	return rubric.OverallPassed, "nothing failed, everything measurable was measured and every reviewer entry was judged"
}

func clamp(p, w float64) float64 {
	if p < 0 || math.IsNaN(p) {
		return 0
	}
	if p > w {
		return w
	}
	return p
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// SortedQuestionKeys returns the question numbers of j in order.
func (j *Judgments) SortedQuestionKeys() []int {
	var ks []int
	for k := range j.Questions {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}
