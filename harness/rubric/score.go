package rubric

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// This file is the one place the project's scores are computed: the measured
// score of a run (score, called by Evaluate), every entry's share of the
// scoring items (EntryWeights), M5's split between its demonstration and the
// defense questions (M5Split), the set of reviewer-judged entries
// (Registry.ReviewerJudged), the final score after review (ComputeFinal) and
// how two point figures compare (PointsExceed, PointsBelow,
// FinalEntry.EarnedInFull). Renderers only print what these computed, and
// nothing else of the module writes the split or the tolerance
// (internal/importrules checks both).
//
// Points are summed unrounded and rounded once, at the end (Round2): a
// perfect review scores exactly the total whatever the weights.

// pointsTolerance is half a hundredth: points are shown and stored to two
// decimals, so two figures within it are the same number of points.
const pointsTolerance = 0.005

// PointsExceed reports whether p is more than limit beyond rounding (a
// reviewer typing the shown weight, 4.17 for 25/6, does not exceed it).
func PointsExceed(p, limit float64) bool { return p > limit+pointsTolerance }

// PointsBelow reports whether a is less than b beyond rounding.
func PointsBelow(a, b float64) bool { return a < b-pointsTolerance }

// EarnedInFull reports whether an entry passed and earned all its points.
func (fe FinalEntry) EarnedInFull() bool {
	return fe.Verdict == Passed && fe.Points > 0 && !PointsBelow(fe.Points, fe.Weight)
}

// judgedPoints is what a reviewer's figure for a part of weight w earns:
// nothing below 0, at most w, and w itself when the figure is w as shown
// (rounded to two decimals), so that full marks typed from the screen are
// full marks.
func judgedPoints(p, w float64) float64 {
	p = clamp(p, w)
	if !PointsBelow(p, w) {
		return w
	}
	return p
}

// ItemScore is one scoring item's share of the score.
type ItemScore struct {
	Item     ID      `json:"item"`
	Weight   int     `json:"weight"`
	Earned   float64 `json:"earned"`
	Measured float64 `json:"measured"`
	// Inputs counts the item's inputs by aggregated verdict.
	InputsTotal    int `json:"-"`
	InputsMeasured int `json:"-"`
	InputsPassed   int `json:"-"`
}

// Score is the run's total: Earned of Measured, out of Total (100).
type Score struct {
	Earned   float64 `json:"earned"`
	Measured float64 `json:"measured"`
	Total    float64 `json:"total"`
}

// String renders "E of M measured (measured M of 100)".
func (s Score) String() string {
	return fmt.Sprintf("%s/%s (measured %s of %s)", Num(s.Earned), Num(s.Measured), Num(s.Measured), Num(s.Total))
}

// score applies the scoring rule of the package doc.
func score(reg *Registry, results map[ID]Result) ([]ItemScore, Score) {
	var items []ItemScore
	total := Score{}
	for _, it := range reg.OfKind(KindScoring) {
		is := ItemScore{Item: it.ID, Weight: it.Weight, InputsTotal: len(it.Inputs)}
		for _, in := range it.Inputs {
			switch results[in].Verdict {
			case Passed:
				is.InputsMeasured++
				is.InputsPassed++
			case Failed, Flaky: // measured, earns nothing
				is.InputsMeasured++
			}
		}
		if is.InputsTotal > 0 {
			w := float64(it.Weight)
			measured := w * float64(is.InputsMeasured) / float64(is.InputsTotal)
			earned := w * float64(is.InputsPassed) / float64(is.InputsTotal)
			is.Measured, is.Earned = Round2(measured), Round2(earned)
			total.Earned += earned // unrounded: rounded once below
			total.Measured += measured
		}
		items = append(items, is)
		total.Total += float64(it.Weight)
	}
	total.Earned, total.Measured = Round2(total.Earned), Round2(total.Measured)
	return items, total
}

// ItemInputs is one scoring item as a report records it: its weight and the
// entries that feed it. The final score is computed from a report's own copy,
// so re-rendering an old bundle scores it with the weights it was graded with.
type ItemInputs struct {
	Item   ID
	Title  string
	Weight int
	Inputs []ID
}

// Items is the registry's scoring items as ItemInputs.
func (r *Registry) Items() []ItemInputs {
	var out []ItemInputs
	for _, e := range r.OfKind(KindScoring) {
		out = append(out, ItemInputs{Item: e.ID, Title: e.Title, Weight: e.Weight, Inputs: append([]ID{}, e.Inputs...)})
	}
	return out
}

// EntryWeight is an entry's share of the scoring items it feeds, and the items.
type EntryWeight struct {
	Weight float64
	Items  []ID
	Shares []float64 // per item, in Items order
}

// EntryWeights derives every graded entry's weight from the scoring items: an
// item of weight W with n inputs gives each input W/n.
func EntryWeights(items []ItemInputs) map[ID]EntryWeight {
	out := map[ID]EntryWeight{}
	for _, s := range items {
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

// ReviewerJudged is the entries a person judges (those with a ReviewGuide),
// in registry order.
func (r *Registry) ReviewerJudged() []ID {
	var out []ID
	for _, e := range r.All() {
		if e.ReviewGuide != "" {
			out = append(out, e.ID)
		}
	}
	return out
}

// ReviewerEntries are the course's reviewer-judged entries: the cost
// estimate, whether another person can reproduce the run from the README, and
// M5's demonstration and defense questions (derived from Course).
var ReviewerEntries = Course.ReviewerJudged()

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

// defenseFraction is the share of M5's weight carried by the defense
// questions (the rest is the demonstration itself).
const defenseFraction = 0.5

// M5Split divides M5's weight w between the demonstration and each of the
// defense questions (DefenseQuestions, equal shares).
func M5Split(w float64) (demonstration, perQuestion float64) {
	return w * (1 - defenseFraction), w * defenseFraction / float64(len(DefenseQuestions))
}

// Judgment is a reviewer's decision on one entry or defense question.
type Judgment struct {
	Verdict        Verdict   `json:"verdict"`
	Points         float64   `json:"points"`
	Note           string    `json:"note,omitempty"`
	Reviewer       string    `json:"reviewer,omitempty"`
	OverrideReason string    `json:"override_reason,omitempty"`
	At             time.Time `json:"at,omitzero"`
}

// Judgments is a reviewer's input as stored in a bundle's review.json.
type Judgments struct {
	Reviewer  string          `json:"reviewer"`
	StartedAt time.Time       `json:"started_at,omitzero"`
	UpdatedAt time.Time       `json:"updated_at,omitzero"`
	Entries   map[ID]Judgment `json:"entries"`
	// Questions are keyed by the defense question's number (1–15).
	Questions map[int]Judgment `json:"questions"`
}

// Final is the final score out of 100 after review, with the provenance of
// every point.
type Final struct {
	Reviewer string `json:"reviewer,omitempty"`
	// Complete is true when every reviewer entry and question is judged.
	Complete bool `json:"complete"`
	// Pending lists what still awaits a reviewer.
	Pending       []string `json:"pending"`
	Verdict       Overall  `json:"verdict"`
	VerdictReason string   `json:"verdict_reason"`
	Score         float64  `json:"score"`
	Total         float64  `json:"total"`
	// Points by provenance, each rounded to two decimals; unrounded they
	// sum to Score.
	MeasuredPoints float64         `json:"measured_points"`
	JudgedPoints   float64         `json:"judged_points"`
	OverridePoints float64         `json:"override_points"`
	Items          []FinalItem     `json:"items"`
	Entries        []FinalEntry    `json:"entries"`
	Questions      []FinalQuestion `json:"questions"`
}

// FinalItem is one scoring item's final points.
type FinalItem struct {
	Item   ID      `json:"item"`
	Title  string  `json:"title"`
	Weight int     `json:"weight"`
	Points float64 `json:"points"`
}

// FinalEntry is one graded entry's final points.
type FinalEntry struct {
	ID    ID     `json:"id"`
	Title string `json:"title"`
	Items []ID   `json:"items"` // scoring items it feeds
	// Weight is the entry's share of its scoring items (item weight / inputs).
	Weight          float64    `json:"weight"`
	Points          float64    `json:"points"`
	Provenance      Provenance `json:"provenance"`
	MeasuredVerdict Verdict    `json:"measured_verdict"`
	Category        Category   `json:"category,omitempty"`
	Verdict         Verdict    `json:"verdict"` // after review; "pending" when awaiting one
	Reason          string     `json:"reason"`
	Note            string     `json:"note,omitempty"`
	OverrideReason  string     `json:"override_reason,omitempty"`
	Reviewer        string     `json:"reviewer,omitempty"`
	// Reviewable: the entry has a reviewer part (judged, not overridden).
	Reviewable bool `json:"reviewable"`
}

// FinalQuestion is one defense question's judgement.
type FinalQuestion struct {
	N        int     `json:"n"`
	Question string  `json:"question"`
	Covers   string  `json:"covers"`
	Weight   float64 `json:"weight"`
	Points   float64 `json:"points"`
	Verdict  Verdict `json:"verdict"` // "pending" when unanswered
	Note     string  `json:"note,omitempty"`
}

// VerdictPending marks an entry or question that awaits a reviewer (Final only).
const VerdictPending Verdict = "pending"

// Row is what the final score reads of one graded entry of a report.
type Row struct {
	ID       ID
	Title    string
	Verdict  Verdict
	Category Category
	Reason   string
	Outcomes []RowOutcome
}

// RowOutcome is one recorded outcome of a Row.
type RowOutcome struct {
	Scenario string
	Verdict  Verdict
	Category Category
	Reason   string
}

// Sheet is what the final score reads of a report: its graded entries in
// report order, its scoring items, its target and why it was aborted.
type Sheet struct {
	Rows    []Row
	Items   []ItemInputs
	Target  Target
	Aborted string
}

// Reviewable reports whether a reviewer judges the entry: something recorded
// a reviewer_judgment outcome for it, and it is one of ReviewerEntries or
// nothing else measured it. An entry the harness measured that merely also
// carries a reviewer note (e.g. M4, whose README scenario is judged as
// maintainability) keeps its measured verdict.
func (r Row) Reviewable() bool {
	if !r.HasReviewerPart() {
		return false
	}
	for _, id := range ReviewerEntries {
		if r.ID == id {
			return true
		}
	}
	for _, o := range r.Outcomes {
		if o.Category != CategoryReviewerJudgment {
			return false
		}
	}
	return true
}

// HasReviewerPart reports whether something recorded a reviewer_judgment
// outcome for the entry.
func (r Row) HasReviewerPart() bool {
	if r.Category == CategoryReviewerJudgment {
		return true
	}
	for _, o := range r.Outcomes {
		if o.Category == CategoryReviewerJudgment {
			return true
		}
	}
	return false
}

// MeasuredPart is the verdict of an entry's outcomes other than the
// reviewer-judgment ones (not_measured/reviewer_judgment if there are none),
// folded with the rubric's rules (Fold: failed, then flaky, then harness
// error, then timeout, then passed). It is what a reviewer's judgement may
// not contradict.
func (r Row) MeasuredPart() (Verdict, Category, string) {
	var mine []Outcome
	for i, o := range r.Outcomes {
		if o.Category == CategoryReviewerJudgment {
			continue
		}
		mine = append(mine, Outcome{Seq: int64(i + 1), ID: r.ID, Verdict: o.Verdict, Category: o.Category, Reason: o.Reason, Scenario: o.Scenario})
	}
	if len(mine) > 0 {
		return Fold(mine)
	}
	if len(r.Outcomes) == 0 && r.Category != CategoryReviewerJudgment {
		return r.Verdict, r.Category, r.Reason
	}
	return NotMeasured, CategoryReviewerJudgment, ""
}

// ComputeFinal merges a reviewer's judgments (nil: none yet) into a measured
// report and returns the final score with its provenance. It does not
// validate j (harness/review does); it never lets a reviewer's judgement
// outweigh a measured failure, a timeout or a harness error unless j carries
// an override reason, and it clamps points to [0, weight].
func ComputeFinal(s Sheet, j *Judgments) *Final {
	if j == nil {
		j = &Judgments{}
	}
	weights := EntryWeights(s.Items)
	f := &Final{Reviewer: j.Reviewer, Pending: []string{}, Items: []FinalItem{}, Entries: []FinalEntry{}, Questions: []FinalQuestion{}}
	itemPoints := map[ID]float64{}
	finalVerdict := map[ID]Verdict{}
	finalCat := map[ID]Category{}
	for _, r := range s.Rows {
		w, feeds := weights[r.ID]
		fe := FinalEntry{ID: r.ID, Title: r.Title, Items: w.Items, Weight: Round2(w.Weight), MeasuredVerdict: r.Verdict,
			Category: r.Category, Reason: r.Reason, Reviewable: r.Reviewable()}
		if fe.Items == nil {
			fe.Items = []ID{}
		}
		jd, judged := j.Entries[r.ID]
		mv, mcat, _ := r.MeasuredPart()
		demoWeight, questionWeight := w.Weight, 0.0
		if r.ID == M5 {
			demoWeight, questionWeight = M5Split(w.Weight)
		}
		switch {
		case judged && jd.OverrideReason != "" && !(mv == NotMeasured && mcat == CategoryTimeout) && mv != HarnessError:
			fe.Provenance, fe.Verdict = ProvOverride, jd.Verdict
			fe.Points = judgedPoints(jd.Points, w.Weight)
			fe.OverrideReason, fe.Note, fe.Reviewer = jd.OverrideReason, jd.Note, firstNonEmpty(jd.Reviewer, j.Reviewer)
			fe.Reviewable = false
		case fe.Reviewable && (mv == Failed || mv == Flaky || mv == HarnessError || mcat == CategoryTimeout):
			// The measured part decides: a reviewer cannot pass what failed
			// (or passed only some of the time).
			fe.Provenance, fe.Verdict, fe.Category = ProvMeasured, mv, mcat
			if mv != Failed && mv != Flaky {
				fe.Provenance = ProvNone
			}
		case fe.Reviewable:
			if judged {
				fe.Provenance, fe.Verdict = ProvJudged, jd.Verdict
				fe.Points = judgedPoints(jd.Points, demoWeight)
				fe.Note, fe.Reviewer = jd.Note, firstNonEmpty(jd.Reviewer, j.Reviewer)
			} else {
				fe.Provenance, fe.Verdict = ProvPending, VerdictPending
				f.Pending = append(f.Pending, string(r.ID))
			}
			if r.ID == M5 {
				qs, pts, pending := computeQuestions(questionWeight, j)
				f.Questions = qs
				fe.Points += pts
				if math.Abs(fe.Points-w.Weight) < 1e-9 { // the parts of M5 in full, up to float error
					fe.Points = w.Weight
				}
				if pending > 0 {
					f.Pending = append(f.Pending, pluralQ(pending))
				}
				if fe.Verdict == Passed && pending > 0 {
					fe.Verdict = VerdictPending
				}
			}
		default:
			fe.Verdict, fe.Provenance = r.Verdict, ProvMeasured
			if r.Verdict == Passed {
				fe.Points = w.Weight
			}
			if r.Verdict == NotMeasured || r.Verdict == HarnessError {
				fe.Provenance = ProvNone
			}
		}
		raw := fe.Points // sums use unrounded points: 6 × 25/6 is 25, not 25.02
		fe.Points = Round2(fe.Points)
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
	for _, it := range s.Items {
		f.Items = append(f.Items, FinalItem{Item: it.Item, Title: it.Title, Weight: it.Weight, Points: Round2(itemPoints[it.Item])})
		f.Total += float64(it.Weight)
	}
	f.Score = Round2(f.MeasuredPoints + f.JudgedPoints + f.OverridePoints)
	f.MeasuredPoints, f.JudgedPoints, f.OverridePoints = Round2(f.MeasuredPoints), Round2(f.JudgedPoints), Round2(f.OverridePoints)
	f.Complete = len(f.Pending) == 0
	f.Verdict, f.VerdictReason = finalOverall(s, finalVerdict, finalCat, f.Pending)
	return f
}

// computeQuestions judges the defense questions, each of weight each. The
// points it returns are the unrounded sum (each question's shown points are
// rounded, their sum is not: 15 × 8/15 is 8, not 15 × 0.53).
func computeQuestions(each float64, j *Judgments) ([]FinalQuestion, float64, int) {
	var out []FinalQuestion
	var pts float64
	pending := 0
	for _, q := range DefenseQuestions {
		fq := FinalQuestion{N: q.N, Question: q.Question, Covers: q.Covers, Weight: Round2(each), Verdict: VerdictPending}
		if a, ok := j.Questions[q.N]; ok {
			fq.Verdict, fq.Note = a.Verdict, a.Note
			p := judgedPoints(a.Points, each)
			fq.Points = Round2(p)
			pts += p
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

// finalOverall applies the overall rules to the final verdicts.
func finalOverall(s Sheet, v map[ID]Verdict, cat map[ID]Category, pending []string) (Overall, string) {
	var errored, unmeasured []string
	var failed, flaky []ID
	for _, r := range s.Rows {
		switch v[r.ID] {
		case Failed:
			failed = append(failed, r.ID)
		case Flaky:
			flaky = append(flaky, r.ID)
		case HarnessError:
			errored = append(errored, string(r.ID))
		case NotMeasured:
			if c := cat[r.ID]; c != CategoryUnsupportedByTarget && c != CategoryReviewerJudgment {
				unmeasured = append(unmeasured, string(r.ID))
			}
		}
	}
	switch {
	case len(failed) > 0 || len(flaky) > 0:
		return OverallNotPassed, NotPassedReason(failed, flaky)
	case s.Aborted != "":
		return OverallIncomplete, "run aborted: " + s.Aborted
	case len(errored) > 0 || len(unmeasured) > 0:
		var parts []string
		if len(errored) > 0 {
			parts = append(parts, "harness error: "+strings.Join(errored, ", "))
		}
		if len(unmeasured) > 0 {
			parts = append(parts, "measurable on "+string(s.Target)+" but not measured: "+strings.Join(unmeasured, ", "))
		}
		return OverallIncomplete, strings.Join(parts, "; ")
	case len(pending) > 0:
		return OverallIncomplete, "awaiting a reviewer: " + strings.Join(pending, ", ")
	}
	return OverallPassed, "nothing failed, everything measurable was measured and every reviewer entry was judged"
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

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
