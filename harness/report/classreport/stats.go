package classreport

import (
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Distribution is the five-number summary of a set of scores. Quartiles
// are interpolated between the sorted scores (the spreadsheet
// PERCENTILE.INC rule), so they can fall between two students' scores.
type Distribution struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Q1     float64 `json:"q1"`
	Median float64 `json:"median"`
	Q3     float64 `json:"q3"`
	Max    float64 `json:"max"`
	Mean   float64 `json:"mean"`
}

// HistBin is one bar of a score histogram: scores in [Lo, Hi), the last
// bin closed ([90, 100]).
type HistBin struct {
	Lo       float64  `json:"lo"`
	Hi       float64  `json:"hi"`
	Count    int      `json:"count"`
	Students []string `json:"students"`
}

// histBins is the number of histogram bars over 0..100.
const histBins = 10

// ReasonGroup is one failure reason of an entry, with the reasons that
// differ from it only in numbers, ids and durations folded in.
type ReasonGroup struct {
	// Reason is the text of the group's first submission (in class order).
	Reason   string   `json:"reason"`
	Variants int      `json:"variants"` // distinct texts folded into the group
	Count    int      `json:"count"`
	Students []string `json:"students"`
}

// ClassFailure is an entry the class failed: failed or flaky (never a
// harness error, which is the harness's, nor not measured) out of the
// submissions that measured it, and its most common reasons.
type ClassFailure struct {
	ID       rubric.ID     `json:"id"`
	Title    string        `json:"title"`
	Security bool          `json:"security"`
	Failed   int           `json:"failed"` // failed + flaky
	Flaky    int           `json:"flaky"`
	Measured int           `json:"measured"`
	Rate     float64       `json:"failure_rate"`
	Groups   []ReasonGroup `json:"reasons"`
}

// maxGroups bounds the reason groups kept per most-failed entry.
const maxGroups = 5

// scoreDistribution summarises scores (nil when there are none).
func scoreDistribution(scores []float64) *Distribution {
	if len(scores) == 0 {
		return nil
	}
	s := append([]float64(nil), scores...)
	sort.Float64s(s)
	q := func(p float64) float64 {
		h := p * float64(len(s)-1)
		lo := math.Floor(h)
		i := int(lo)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return rubric.Round2(s[i] + (h-lo)*(s[i+1]-s[i]))
	}
	sum := 0.0
	for _, v := range s {
		sum += v
	}
	return &Distribution{N: len(s), Min: s[0], Q1: q(0.25), Median: q(0.5), Q3: q(0.75), Max: s[len(s)-1], Mean: rubric.Round2(sum / float64(len(s)))}
}

// histogram bins named scores over 0..total in histBins bars.
func histogram(total float64, names []string, scores []float64) []HistBin {
	if total <= 0 {
		total = 100
	}
	w := total / histBins
	bins := make([]HistBin, histBins)
	for i := range bins {
		bins[i] = HistBin{Lo: rubric.Round2(float64(i) * w), Hi: rubric.Round2(float64(i+1) * w), Students: []string{}}
	}
	for i, v := range scores {
		b := int(math.Floor(v / w))
		b = max(0, min(b, histBins-1))
		bins[b].Count++
		bins[b].Students = append(bins[b].Students, names[i])
	}
	return bins
}

var (
	reUUID   = regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	reHexID  = regexp.MustCompile(`\b[0-9a-f]{6,}\b`)
	reNumber = regexp.MustCompile(`\b\d+(?:[.,:]\d+)*(?:ms|µs|ns|s|m|h|%)?`)
	reSpace  = regexp.MustCompile(`\s+`)
)

// reasonKey is the text reasons are grouped by: lower case, with ids,
// numbers and durations masked (a sandbox id or a count differs between
// two submissions that did the same thing), blanks folded.
func reasonKey(r string) string {
	k := reUUID.ReplaceAllString(strings.ToLower(r), "<id>")
	k = reHexID.ReplaceAllStringFunc(k, func(m string) string {
		if !strings.ContainsAny(m, "0123456789") {
			return m // a word such as "facade"
		}
		return "<id>"
	})
	k = reNumber.ReplaceAllString(k, "<n>")
	return strings.TrimSpace(reSpace.ReplaceAllString(k, " "))
}

// failedVerdict: the submission failed the entry (flaky is never a pass).
func failedVerdict(v rubric.Verdict) bool { return v == rubric.Failed || v == rubric.Flaky }

func isSecurity(id rubric.ID) bool {
	for _, s := range rubric.SecurityCriteria {
		if s == id {
			return true
		}
	}
	return false
}

// mostFailed lists the entries at least one submission failed, highest
// failure rate first (then most failures, then entry order), each with its
// reasons grouped by similar text, most common first.
func mostFailed(c *Class) []ClassFailure {
	type grp struct {
		g     ReasonGroup
		texts map[string]bool
		first int
	}
	var out []ClassFailure
	for _, e := range c.Entries {
		f := ClassFailure{ID: e.ID, Title: e.Title, Security: isSecurity(e.ID), Failed: e.Failed + e.Flaky, Flaky: e.Flaky, Measured: e.Measured}
		if f.Failed == 0 {
			continue
		}
		f.Rate = float64(f.Failed) / float64(f.Measured)
		groups := map[string]*grp{}
		var order []string
		for _, s := range c.Students {
			r, ok := s.entry(e.ID)
			if !ok || !failedVerdict(r.Verdict) {
				continue
			}
			k := reasonKey(r.Reason)
			g, ok := groups[k]
			if !ok {
				g = &grp{g: ReasonGroup{Reason: r.Reason}, texts: map[string]bool{}, first: len(order)}
				groups[k] = g
				order = append(order, k)
			}
			g.texts[r.Reason] = true
			g.g.Count++
			g.g.Students = append(g.g.Students, s.Name)
		}
		for _, k := range order {
			g := groups[k]
			g.g.Variants = len(g.texts)
			f.Groups = append(f.Groups, g.g)
		}
		sort.SliceStable(f.Groups, func(i, j int) bool { return f.Groups[i].Count > f.Groups[j].Count })
		if len(f.Groups) > maxGroups {
			f.Groups = f.Groups[:maxGroups]
		}
		out = append(out, f)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Rate != out[j].Rate {
			return out[i].Rate > out[j].Rate
		}
		return out[i].Failed > out[j].Failed
	})
	return out
}

// entry is the student's row for id.
func (s ClassStudent) entry(id rubric.ID) (report.EntryRow, bool) {
	for _, r := range s.Doc.AllEntries() {
		if r.ID == id {
			return r, true
		}
	}
	return report.EntryRow{}, false
}

// SecurityFailed lists the security criteria the submission failed (or
// passed only some repetitions of).
func (s ClassStudent) SecurityFailed() []rubric.ID {
	var out []rubric.ID
	for _, r := range s.Doc.AllEntries() {
		if isSecurity(r.ID) && failedVerdict(r.Verdict) {
			out = append(out, r.ID)
		}
	}
	return out
}

// addStats fills the class's distribution, histograms and most-failed
// entries from its students.
func (c *Class) addStats() {
	var names, finalNames []string
	var scores, finals []float64
	total := 0.0
	for _, s := range c.Students {
		if s.Err != "" {
			continue
		}
		names = append(names, s.Name)
		scores = append(scores, s.Doc.Score.Earned)
		total = max(total, s.Doc.Score.Total)
		if s.Final != nil {
			finalNames = append(finalNames, s.Name)
			finals = append(finals, s.Final.Score)
		}
	}
	c.Total = total
	if c.Total == 0 {
		c.Total = 100
	}
	c.Dist = scoreDistribution(scores)
	c.Histogram = histogram(c.Total, names, scores)
	if len(finals) > 0 {
		c.FinalDist = scoreDistribution(finals)
		c.FinalHistogram = histogram(c.Total, finalNames, finals)
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		e.Security = isSecurity(e.ID)
		for _, s := range c.Students {
			if r, ok := s.entry(e.ID); ok && len(r.StandIns) > 0 {
				e.StandIn++
			}
		}
	}
	c.MostFailed = mostFailed(c)
	for _, s := range c.Students {
		if s.Err == "" && len(s.SecurityFailed()) > 0 {
			c.SecurityFailed++
		}
	}
}
