package render

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

//go:embed report.html.tmpl
var htmlTemplate string

var htmlTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":      func(f float64) string { return rubric.Num(f) },
	"title":    VerdictTitle,
	"overall":  func(v rubric.Overall) string { return string(v) },
	"vclass":   VerdictClass,
	"vwords":   verdictWords,
	"provword": provenanceWords,
	"ts":       func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"base":     func(p string) string { return p[strings.LastIndex(p, "/")+1:] },
	"inc":      func(i int) int { return i + 1 },
	// Only our own PNG thumbnails are trusted as data URIs.
	"pngdata": func(s string) template.URL {
		if strings.HasPrefix(s, "data:image/png;base64,") {
			return template.URL(s)
		}
		return ""
	},
}).Parse(htmlTemplate))

// htmlView is what report.html.tmpl renders.
type htmlView struct {
	D         report.Document
	F         *report.Final
	Reviewed  bool
	Score     float64
	Total     float64
	Verdict   rubric.Overall
	Reason    string
	Versions  []string
	Sections  []htmlSection
	Timelines []htmlTimeline
	// Commands are the timelines of the submission's contract, reap and
	// test commands.
	Commands   []htmlTimeline
	FinalByID  map[rubric.ID]report.FinalEntry
	ItemPoints map[rubric.ID]float64
}

type htmlSection struct {
	Title string
	Rows  []htmlRow
}

type htmlRow struct {
	report.EntryRow
	Final   *report.FinalEntry
	Verdict rubric.Verdict
}

type htmlTimeline struct {
	Run report.SubjectRun
	// HiddenSandboxes and HiddenSteps count the bars left out beyond
	// maxBars (a test suite may create hundreds); the evidence has them all.
	HiddenSandboxes, HiddenSteps int
	Width                        int
	Height                       int
	Ticks                        []svgText
	Bars                         []svgBar
	Marks                        []svgMark
	Legend                       []report.Marker
}

type svgBar struct {
	Y, X, W          int
	Label, Note, Cls string
	Lane             string
}

type svgMark struct {
	X           int
	Label, Kind string
	N           int
}

type svgText struct {
	X    int
	Text string
}

// writeHTML renders report.html: one self-contained page (inline CSS and
// SVG, no script, no external asset; chart thumbnails are small data URIs)
// with the verdict and score at the top, the target preflight (never
// scored), the rubric as a coloured table, each entry's reason and evidence
// links, a timeline of every subject run and of every contract, reap and
// test command the submission ran.
// InertPage writes what write writes to w with every control character
// but newline and tab (and every bidi override) shown as a visible escape
// (harness/inert.Text): html/template and encoding/xml escape markup, not
// an ESC or a bidi override a submission's text carries into report.html,
// class.html or junit.xml.
func InertPage(w io.Writer, write func(io.Writer) error) error {
	var b strings.Builder
	if err := write(&b); err != nil {
		return err
	}
	_, err := io.WriteString(w, inert.Text(b.String()))
	return err
}

func writeHTML(w io.Writer, d report.Document, f *report.Final, reviewed bool) error {
	v := htmlView{D: d, F: f, Reviewed: reviewed, FinalByID: map[rubric.ID]report.FinalEntry{}}
	for _, fe := range v.F.Entries {
		v.FinalByID[fe.ID] = fe
	}
	v.Score, v.Total, v.Verdict, v.Reason = v.F.Score, v.F.Total, v.F.Verdict, v.F.VerdictReason
	if !v.Reviewed {
		v.Score, v.Verdict, v.Reason = d.Score.Earned, d.Verdict, d.VerdictReason
	}
	keys := make([]string, 0, len(d.Versions))
	for k := range d.Versions {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v.Versions = append(v.Versions, k+" "+d.Versions[k])
	}
	for _, s := range []struct {
		t    string
		rows []report.EntryRow
	}{{"Acceptance criteria", d.Criteria}, {"Milestones", d.Milestones}, {"Fault drills", d.Drills}} {
		sec := htmlSection{Title: s.t}
		for _, r := range s.rows {
			hr := htmlRow{EntryRow: r, Verdict: r.Verdict}
			if fe, ok := v.FinalByID[r.ID]; ok {
				fe := fe
				hr.Final = &fe
				if v.Reviewed {
					hr.Verdict = fe.Verdict
				}
			}
			sec.Rows = append(sec.Rows, hr)
		}
		v.Sections = append(v.Sections, sec)
	}
	for _, r := range d.Runs {
		v.Timelines = append(v.Timelines, layoutTimeline(r))
	}
	for _, r := range d.Invocations {
		v.Commands = append(v.Commands, layoutTimeline(r))
	}
	return InertPage(w, func(w io.Writer) error { return htmlTmpl.Execute(w, v) })
}

const (
	tlWidth  = 1100
	tlLabel  = 190
	tlRight  = 260
	tlRowH   = 22
	tlTop    = 26
	tlBottom = 14
	// maxBars bounds the sandbox bars and the step bars of one timeline each.
	maxBars = 40
)

// layoutTimeline places a run's bars and markers on a time axis.
func layoutTimeline(r report.SubjectRun) htmlTimeline {
	t0, t1 := r.Start, r.End
	widen := func(t time.Time) {
		if t.IsZero() {
			return
		}
		if t0.IsZero() || t.Before(t0) {
			t0 = t
		}
		if t1.IsZero() || t.After(t1) {
			t1 = t
		}
	}
	steps := append([]report.TimelineStep{}, r.Steps...)
	cursor := r.Start
	for i := range steps {
		if steps[i].Start.IsZero() && !cursor.IsZero() {
			steps[i].Start = cursor // the subject's own account: laid end to end
		}
		cursor = steps[i].Start.Add(time.Duration(steps[i].DurationMs) * time.Millisecond)
		widen(steps[i].Start)
		widen(cursor)
	}
	for _, s := range r.Sandboxes {
		widen(s.Created)
		widen(s.Deleted)
		widen(s.Gone404)
	}
	for _, m := range r.Markers {
		widen(m.At)
	}
	span := t1.Sub(t0)
	if span <= 0 {
		span = time.Second
	}
	plot := float64(tlWidth - tlLabel - tlRight)
	x := func(t time.Time) int {
		if t.IsZero() {
			return tlLabel
		}
		return tlLabel + int(math.Round(plot*float64(t.Sub(t0))/float64(span)))
	}
	tl := htmlTimeline{Run: r, Width: tlWidth}
	y := tlTop
	add := func(lane string, a, b time.Time, label, note, cls string) {
		xa, xb := x(a), x(b)
		if xb-xa < 2 {
			xb = xa + 2
		}
		tl.Bars = append(tl.Bars, svgBar{Y: y, X: xa, W: xb - xa, Label: label, Note: note, Cls: cls, Lane: lane})
		y += tlRowH
	}
	if !r.Start.IsZero() {
		cls, note := "pass", fmt.Sprintf("exit %d", r.ExitCode)
		if r.ExitCode != 0 {
			cls = "fail"
		}
		if r.Signal != "" {
			note += " (" + r.Signal + ")"
		}
		if r.TimedOut {
			cls, note = "fail", note+" (timed out)"
		}
		if r.HarnessError != "" {
			cls, note = "error", "harness error: "+r.HarnessError
		}
		lane, label := "subject", "subject process"
		if r.Field != "" {
			lane, label = "command", r.Field+" command"
		}
		add(lane, r.Start, r.End, label, note, cls)
	}
	drawn := 0
	for _, s := range r.Sandboxes {
		if s.Created.IsZero() && s.Deleted.IsZero() && s.EndState == "" {
			continue // only looked up (e.g. a GET answered 404): no life to draw
		}
		if drawn == maxBars {
			tl.HiddenSandboxes++
			continue
		}
		drawn++
		end, note, cls := s.Deleted, "deleted", "box"
		created := s.Created
		if created.IsZero() {
			// Created before this timeline (e.g. the killed run's sandbox a
			// reap command deleted): drawn from the start.
			created, note = t0, "created earlier, deleted"
		}
		if end.IsZero() {
			end, note, cls = r.End, "never deleted", "fail"
			if s.EndState != "" {
				note = strings.ToLower(s.EndState) + ": " + s.EndReason
			}
		}
		if !s.Gone404.IsZero() {
			note += ", GET 404 at +" + s.Gone404.Sub(t0).Round(time.Millisecond).String()
		}
		id := s.ID
		if len(id) > 8 {
			id = id[:8]
		}
		add("sandbox", created, end, "sandbox "+id, note, cls)
		if !s.Gone404.IsZero() {
			tl.Marks = append(tl.Marks, svgMark{X: x(s.Gone404), Label: "404", Kind: "gone"})
		}
	}
	if len(steps) > maxBars {
		tl.HiddenSteps = len(steps) - maxBars
		steps = steps[:maxBars]
	}
	for _, s := range steps {
		cls, note := "pass", "exit ?"
		if s.ExitCode != nil {
			note = fmt.Sprintf("exit %d", *s.ExitCode)
			if *s.ExitCode != 0 {
				cls = "fail"
			}
		}
		if s.Error != "" {
			cls, note = "fail", note+" ("+s.Error+")"
		}
		note += fmt.Sprintf(", %d ms", s.DurationMs)
		add("step", s.Start, s.Start.Add(time.Duration(s.DurationMs)*time.Millisecond), "step "+s.Name, note, cls)
	}
	for i, m := range r.Markers {
		tl.Marks = append(tl.Marks, svgMark{X: x(m.At), Label: m.Label, Kind: m.Kind, N: i + 1})
		tl.Legend = append(tl.Legend, m)
	}
	// Ticks: a round step giving at most ~8 ticks.
	stepS := niceStep(span.Seconds() / 8)
	for s := 0.0; s <= span.Seconds()+1e-9; s += stepS {
		tl.Ticks = append(tl.Ticks, svgText{X: tlLabel + int(math.Round(plot*s/span.Seconds())), Text: "+" + rubric.Num(s) + "s"})
	}
	tl.Height = y + tlBottom
	return tl
}

func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*mag {
			return m * mag
		}
	}
	return 10 * mag
}
