package classreport

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"strings"

	_ "embed"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Histogram geometry (SVG user units).
const (
	histW, histH       = 620, 250
	histX0, histX1     = 44, 604
	histYTop, histYBot = 36, 190
	boxY               = 222
)

// classView is what class.html is drawn from: the class plus the
// geometry of its charts and the map's cells, all computed here so the
// template only places them.
type classView struct {
	Class
	Hist      *histView
	FinalHist *histView
	Rows      []mapRow
	Cols      []mapCol
	StandIns  int // cells resting on a stand-in
	NotMeas   int // cells not measured
	Failures  []failureView
}

type histView struct {
	ID, Label string
	W, H      int
	Bars      []histBar
	Ticks     []histTick
	YTicks    []histTick
	Dist      *Distribution
	Box       *boxView
	AxisY     int
	X0, X1    int
}

type histBar struct {
	X, Y, W, H   float64
	Lo, Hi       string
	Count        int
	LabelX, LabY float64
	Title        string
}

type histTick struct {
	Pos  float64
	Text string
}

type boxView struct{ Min, Q1, Med, Q3, Max, Y, Top, Bot float64 }

type mapCol struct {
	ID       rubric.ID
	Title    string
	Security bool
	Rate     float64 // failure rate (0 when nothing was measured)
	RateText string
	Order    int // rubric order
	Failed   int
	Measured int
}

type mapCell struct {
	ID       rubric.ID
	Verdict  rubric.Verdict
	Class    string
	Mark     string
	Rank     int
	Href     string
	Title    string
	StandIn  bool
	Category rubric.Category
}

type mapRow struct {
	Name, Bundle, Err string
	Student           string // the submission's own name (ClassStudent.StudentText)
	Verdict           rubric.Overall
	Score             float64
	Final             *float64
	Security          []rubric.ID
	Cells             []mapCell
}

type failureView struct {
	ClassFailure
	RatePct string
	BarW    float64
	Groups  []groupView
}

type groupView struct {
	ReasonGroup
	Examples []exampleLink
	More     int
}

type exampleLink struct{ Name, Href string }

// verdictRank orders cells when a column is sorted: failures first.
func verdictRank(v rubric.Verdict) int {
	switch v {
	case rubric.Failed:
		return 0
	case rubric.Flaky:
		return 1
	case rubric.HarnessError:
		return 2
	case rubric.Passed:
		return 4
	}
	return 3
}

func entryHref(bundle string, id rubric.ID) string {
	return bundle + "/" + report.HTMLFile + "#entry-" + string(id)
}

func newHistView(id, label string, bins []HistBin, d *Distribution, total float64) *histView {
	h := &histView{ID: id, Label: label, W: histW, H: histH, Dist: d, AxisY: histYBot, X0: histX0, X1: histX1}
	maxC := 1
	for _, b := range bins {
		maxC = max(maxC, b.Count)
	}
	x := func(v float64) float64 { return histX0 + v/total*(histX1-histX0) }
	for i, b := range bins {
		bh := float64(b.Count) / float64(maxC) * (histYBot - histYTop)
		bar := histBar{X: x(b.Lo) + 1, W: x(b.Hi) - x(b.Lo) - 2, Y: histYBot - bh, H: bh, Lo: rubric.Num(b.Lo), Hi: rubric.Num(b.Hi), Count: b.Count}
		bar.LabelX = bar.X + bar.W/2
		bar.LabY = bar.Y - 4
		rng := fmt.Sprintf("%s–<%s", bar.Lo, bar.Hi)
		if i == len(bins)-1 {
			rng = fmt.Sprintf("%s–%s", bar.Lo, bar.Hi)
		}
		bar.Title = fmt.Sprintf("%s: %d submission(s)", rng, b.Count)
		if b.Count > 0 {
			bar.Title += ": " + examples(b.Students, 8)
		}
		h.Bars = append(h.Bars, bar)
		h.Ticks = append(h.Ticks, histTick{Pos: x(b.Lo), Text: rubric.Num(b.Lo)})
	}
	h.Ticks = append(h.Ticks, histTick{Pos: x(total), Text: rubric.Num(total)})
	for _, v := range []int{0, maxC / 2, maxC} {
		if v == 0 && maxC > 0 || v > 0 {
			h.YTicks = append(h.YTicks, histTick{Pos: histYBot - float64(v)/float64(maxC)*(histYBot-histYTop), Text: fmt.Sprint(v)})
		}
	}
	if d != nil {
		h.Box = &boxView{Min: x(d.Min), Q1: x(d.Q1), Med: x(d.Median), Q3: x(d.Q3), Max: x(d.Max), Y: boxY, Top: boxY - 8, Bot: boxY + 8}
	}
	return h
}

func newClassView(c Class) classView {
	v := classView{Class: c}
	if c.Dist != nil {
		v.Hist = newHistView("histogram", "measured scores", c.Histogram, c.Dist, c.Total)
	}
	if c.FinalDist != nil {
		v.FinalHist = newHistView("final-histogram", "final scores (reviewed)", c.FinalHistogram, c.FinalDist, c.Total)
	}
	for i, e := range c.Entries {
		col := mapCol{ID: e.ID, Title: e.Title, Security: e.Security, Order: i, Failed: e.Failed + e.Flaky, Measured: e.Measured, RateText: "n/a"}
		if e.Measured > 0 {
			col.Rate = float64(col.Failed) / float64(e.Measured)
			col.RateText = pct(col.Rate)
		}
		v.Cols = append(v.Cols, col)
	}
	for _, s := range c.Students {
		r := mapRow{Name: s.Name, Bundle: s.Bundle, Err: s.Err, Student: s.StudentText()}
		if s.Err == "" {
			r.Verdict, r.Score, r.Security = s.Doc.Verdict, s.Doc.Score.Earned, s.SecurityFailed()
			if s.Final != nil {
				f := s.Final.Score
				r.Final = &f
			}
		}
		for _, e := range c.Entries {
			cl := mapCell{ID: e.ID, Verdict: "", Class: "none", Mark: "", Rank: 5}
			if er, ok := s.entry(e.ID); ok {
				cl.Verdict, cl.Category = er.Verdict, er.Category
				cl.Class, cl.Mark, cl.Rank = render.VerdictClass(er.Verdict), render.VerdictMark(er.Verdict), verdictRank(er.Verdict)
				cl.Href = entryHref(s.Bundle, e.ID)
				cl.StandIn = len(er.StandIns) > 0
				words := string(er.Verdict)
				if er.Category != "" {
					words += " (" + string(er.Category) + ")"
				}
				cl.Title = fmt.Sprintf("%s · %s: %s", s.Name, e.ID, words)
				if er.Reason != "" {
					cl.Title += ": " + er.Reason
				}
				if cl.StandIn {
					cl.Title += fmt.Sprintf(" [stand-in: %s]", joinComponents(er.StandIns))
					v.StandIns++
				}
				if er.Verdict == rubric.NotMeasured {
					v.NotMeas++
				}
			}
			r.Cells = append(r.Cells, cl)
		}
		v.Rows = append(v.Rows, r)
	}
	bundleOf := map[string]string{}
	for _, s := range c.Students {
		bundleOf[s.Name] = s.Bundle
	}
	for _, f := range c.MostFailed {
		fv := failureView{ClassFailure: f, RatePct: pct(f.Rate), BarW: f.Rate * 160}
		for _, g := range f.Groups {
			gv := groupView{ReasonGroup: g}
			for i, n := range g.Students {
				if i == 5 {
					gv.More = len(g.Students) - 5
					break
				}
				gv.Examples = append(gv.Examples, exampleLink{Name: n, Href: entryHref(bundleOf[n], f.ID)})
			}
			fv.Groups = append(fv.Groups, gv)
		}
		v.Failures = append(v.Failures, fv)
	}
	return v
}

func joinComponents(cs []rubric.Component) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

//go:embed class.html.tmpl
var classHTMLTemplate string

var classTmpl = template.Must(template.New("class").Funcs(template.FuncMap{
	"num":    func(f float64) string { return rubric.Num(f) },
	"f1":     func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"title":  render.VerdictTitle,
	"pct":    pct,
	"vclass": render.VerdictClass,
	"earned": func(s ClassStudent, item rubric.ID) string {
		if e, ok := s.itemEarned(item); ok {
			return rubric.Num(e)
		}
		return ""
	},
	"join": func(s []string) string { return strings.Join(s, ", ") },
	"ids": func(ids []rubric.ID) string {
		var s []string
		for _, id := range ids {
			s = append(s, string(id))
		}
		return strings.Join(s, " ")
	},
	"deref": func(f *float64) float64 { return *f },
	"sub":   func(a, b float64) float64 { return a - b },
}).Parse(classHTMLTemplate))

func writeClassHTML(buf *bytes.Buffer, c Class) error {
	return render.InertPage(buf, func(w io.Writer) error { return classTmpl.Execute(w, newClassView(c)) })
}
