package classreport

import (
	"github.com/osb-capstone/acceptance/harness/confine"

	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// topReasonsMD bounds the reason groups class.md shows per entry.
const topReasonsMD = 3

// examples names at most n students, "+k more" after them.
func examples(students []string, n int) string {
	if len(students) <= n {
		return strings.Join(students, ", ")
	}
	return strings.Join(students[:n], ", ") + fmt.Sprintf(" +%d more", len(students)-n)
}

func distLine(d *Distribution) string {
	return fmt.Sprintf("min %s, Q1 %s, median %s, Q3 %s, max %s (mean %s, %d submissions)",
		rubric.Num(d.Min), rubric.Num(d.Q1), rubric.Num(d.Median), rubric.Num(d.Q3), rubric.Num(d.Max), rubric.Num(d.Mean), d.N)
}

func binLabel(b HistBin, last bool) string {
	if last {
		return fmt.Sprintf("%s–%s", rubric.Num(b.Lo), rubric.Num(b.Hi))
	}
	return fmt.Sprintf("%s–<%s", rubric.Num(b.Lo), rubric.Num(b.Hi))
}

func writeClassDistribution(b *strings.Builder, c Class) {
	b.WriteString("## Score distribution\n\n")
	if c.Dist == nil {
		b.WriteString("No readable bundle.\n\n")
		return
	}
	fmt.Fprintf(b, "Measured scores (of %s): %s. Quartiles are interpolated between scores.", rubric.Num(c.Total), distLine(c.Dist))
	if c.FinalDist != nil {
		fmt.Fprintf(b, " Final scores of the reviewed bundles: %s.", distLine(c.FinalDist))
	}
	b.WriteString("\n\n| Score | Submissions |")
	if c.FinalDist != nil {
		b.WriteString(" Final (reviewed) |")
	}
	b.WriteString("\n|---|---:|")
	if c.FinalDist != nil {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for i, h := range c.Histogram {
		fmt.Fprintf(b, "| %s | %d |", binLabel(h, i == len(c.Histogram)-1), h.Count)
		if c.FinalDist != nil {
			fmt.Fprintf(b, " %d |", c.FinalHistogram[i].Count)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
}

// shortReason is a reason's first line, at most 160 characters: a
// traceback belongs in the bundle, not in a summary's cell.
func shortReason(r string) string {
	line, _, more := strings.Cut(strings.TrimSpace(r), "\n")
	if rs := []rune(line); len(rs) > 160 {
		return string(rs[:159]) + "…"
	}
	if more {
		return line + " …"
	}
	return line
}

func writeClassMostFailed(b *strings.Builder, c Class) {
	b.WriteString("\n## Most-failed entries\n\n")
	if len(c.MostFailed) == 0 {
		b.WriteString("No submission failed an entry.\n")
		return
	}
	b.WriteString("Failure rate = (failed + flaky) / measured; harness errors and not measured are never a submission's failure. Reasons are grouped when they differ only in numbers and ids.\n\n")
	b.WriteString("| Entry | Failure rate | Top reasons (submissions) |\n|---|---:|---|\n")
	for _, f := range c.MostFailed {
		var rs []string
		for i, g := range f.Groups {
			if i == topReasonsMD {
				break
			}
			v := ""
			if g.Variants > 1 {
				v = fmt.Sprintf(" [%d similar texts]", g.Variants)
			}
			rs = append(rs, fmt.Sprintf("%d× %s%s (%s)", g.Count, shortReason(g.Reason), v, examples(g.Students, 3)))
		}
		sec := ""
		if f.Security {
			sec = " (security)"
		}
		fl := ""
		if f.Flaky > 0 {
			fl = fmt.Sprintf(" (%d flaky)", f.Flaky)
		}
		fmt.Fprintf(b, "| %s: %s%s | %s: %d of %d%s | %s |\n", f.ID, render.Cell(f.Title), sec, pct(f.Rate), f.Failed, f.Measured, fl, render.Cell(strings.Join(rs, "\n")))
	}
}

// csvText is a text cell of class.csv: one inert line (harness/inert: no
// control character, a newline shown as \n), and, when it starts with a
// character a spreadsheet reads as a formula (= + - @, a tab or a carriage
// return), prefixed with ' so it is shown as text (OWASP's CSV injection
// advice). encoding/csv quotes what needs quoting.
func csvText(s string) string {
	s = inert.Line(s)
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}

// ClassCSVFooterPrefix starts the student column of class.csv's rows that
// are the class's figures, not a submission.
const ClassCSVFooterPrefix = "(class) "

// writeClassCSVFooter appends the class's figures below the students, as a
// spreadsheet's totals rows: the bundle column is empty (RefreshClassSummary
// and tools skip them), the student column names the figure, the score
// columns hold the distribution and each entry's column its failure rate
// and top reason.
func writeClassCSVFooter(w *csv.Writer, c Class, head []string) error {
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	width := len(head)
	entryCol := map[rubric.ID]int{}
	for _, e := range c.Entries {
		entryCol[e.ID] = col[string(e.ID)]
	}
	row := func(label string) []string {
		r := make([]string, width)
		r[0] = label
		return r
	}
	var rows [][]string
	if c.Dist != nil {
		for _, q := range []struct {
			name string
			get  func(*Distribution) float64
		}{{"min", func(d *Distribution) float64 { return d.Min }}, {"q1", func(d *Distribution) float64 { return d.Q1 }},
			{"median", func(d *Distribution) float64 { return d.Median }}, {"q3", func(d *Distribution) float64 { return d.Q3 }},
			{"max", func(d *Distribution) float64 { return d.Max }}, {"mean", func(d *Distribution) float64 { return d.Mean }}} {
			r := row(ClassCSVFooterPrefix + q.name)
			r[col["score_earned"]] = rubric.Num(q.get(c.Dist))
			if c.FinalDist != nil {
				r[col["final_score"]] = rubric.Num(q.get(c.FinalDist))
			}
			rows = append(rows, r)
		}
	}
	rate, top := row(ClassCSVFooterPrefix+"failure rate"), row(ClassCSVFooterPrefix+"top reason")
	for _, e := range c.Entries {
		if e.Measured > 0 {
			rate[entryCol[e.ID]] = pct(float64(e.Failed+e.Flaky) / float64(e.Measured))
		} else {
			rate[entryCol[e.ID]] = "n/a"
		}
	}
	for _, f := range c.MostFailed {
		if len(f.Groups) > 0 {
			g := f.Groups[0]
			top[entryCol[f.ID]] = csvText(fmt.Sprintf("%d× %s", g.Count, shortReason(g.Reason)))
		}
	}
	rows = append(rows, rate, top)
	return w.WriteAll(rows)
}

// ClassJSON is class.json: the class's figures and every entry's verdict
// per student, for spreadsheets and other tools.
type ClassJSON struct {
	SchemaVersion string `json:"schema_version"`
	Submissions   int    `json:"submissions"`
	// ConfinementLevel is the weakest level the submissions' commands ran
	// at (docs/confinement.md); each student's is its own.
	ConfinementLevel confine.Level  `json:"confinement_level,omitempty"`
	Passed           int            `json:"passed"`
	NotPassed        int            `json:"not_passed"`
	Incomplete       int            `json:"incomplete"`
	Unreadable       int            `json:"unreadable"`
	WithFlaky        int            `json:"with_flaky"`
	SecurityFailed   int            `json:"failed_security"`
	Total            float64        `json:"total"`
	Distribution     *Distribution  `json:"distribution"`
	Histogram        []HistBin      `json:"histogram"`
	FinalDist        *Distribution  `json:"final_distribution,omitempty"`
	FinalHistogram   []HistBin      `json:"final_histogram,omitempty"`
	Entries          []ClassJSONEnt `json:"entries"`
	MostFailed       []ClassFailure `json:"most_failed"`
	Students         []ClassJSONStu `json:"students"`
}

// ClassJSONEnt is one entry's tally in class.json.
type ClassJSONEnt struct {
	ID           rubric.ID `json:"id"`
	Title        string    `json:"title"`
	Security     bool      `json:"security"`
	Passed       int       `json:"passed"`
	Failed       int       `json:"failed"`
	Flaky        int       `json:"flaky"`
	NotMeasured  int       `json:"not_measured"`
	HarnessError int       `json:"harness_error"`
	StandIn      int       `json:"stand_in"`
	Measured     int       `json:"measured"`
	PassRate     *float64  `json:"pass_rate"` // null when nothing was measured
}

// ClassJSONStu is one submission in class.json.
type ClassJSONStu struct {
	Name             string                     `json:"name"`
	Bundle           string                     `json:"bundle"`
	Error            string                     `json:"error,omitempty"`
	ConfinementLevel confine.Level              `json:"confinement_level,omitempty"`
	Verdict          rubric.Overall             `json:"verdict,omitempty"`
	ExitCode         int                        `json:"exit_code"`
	Score            *rubric.Score              `json:"score,omitempty"`
	FinalScore       *float64                   `json:"final_score,omitempty"`
	ReviewComplete   *bool                      `json:"review_complete,omitempty"`
	SecurityFailed   []rubric.ID                `json:"failed_security"`
	Entries          map[rubric.ID]ClassJSONCel `json:"entries"`
}

// ClassJSONCel is one entry's verdict for one submission.
type ClassJSONCel struct {
	Verdict  rubric.Verdict     `json:"verdict"`
	Category rubric.Category    `json:"category,omitempty"`
	Reason   string             `json:"reason"`
	StandIns []rubric.Component `json:"stand_ins,omitempty"`
}

// ClassJSONOf is the class.json document of c.
func ClassJSONOf(c Class) ClassJSON {
	j := ClassJSON{SchemaVersion: "1", Submissions: len(c.Students), Passed: c.Passed, NotPassed: c.NotPass, Incomplete: c.Incompl,
		Unreadable: c.Broken, WithFlaky: c.WithFlaky, SecurityFailed: c.SecurityFailed, Total: c.Total,
		Distribution: c.Dist, Histogram: c.Histogram, FinalDist: c.FinalDist, FinalHistogram: c.FinalHistogram,
		Entries: []ClassJSONEnt{}, MostFailed: c.MostFailed, Students: []ClassJSONStu{}, ConfinementLevel: ConfinementLevelOf(c)}
	if j.MostFailed == nil {
		j.MostFailed = []ClassFailure{}
	}
	for _, e := range c.Entries {
		je := ClassJSONEnt{ID: e.ID, Title: e.Title, Security: e.Security, Passed: e.Passed, Failed: e.Failed, Flaky: e.Flaky,
			NotMeasured: e.NotMeasured, HarnessError: e.Errored, StandIn: e.StandIn, Measured: e.Measured}
		if e.Measured > 0 {
			r := rubric.Round2(e.PassRate)
			je.PassRate = &r
		}
		j.Entries = append(j.Entries, je)
	}
	for _, s := range c.Students {
		js := ClassJSONStu{Name: s.Name, Bundle: s.Bundle, Error: s.Err, SecurityFailed: []rubric.ID{}, Entries: map[rubric.ID]ClassJSONCel{}}
		if s.Err == "" {
			sc := s.Doc.Score
			js.Verdict, js.ExitCode, js.Score = s.Doc.Verdict, s.Doc.ExitCode, &sc
			if s.Doc.Confinement != nil {
				js.ConfinementLevel = s.Doc.Confinement.Level
			}
			if s.Final != nil {
				f, done := s.Final.Score, s.Final.Complete
				js.FinalScore, js.ReviewComplete = &f, &done
			}
			if sf := s.SecurityFailed(); sf != nil {
				js.SecurityFailed = sf
			}
			for _, r := range s.Doc.AllEntries() {
				js.Entries[r.ID] = ClassJSONCel{Verdict: r.Verdict, Category: r.Category, Reason: r.Reason, StandIns: r.StandIns}
			}
		}
		j.Students = append(j.Students, js)
	}
	return j
}

func writeClassJSON(buf *bytes.Buffer, c Class) error {
	enc := json.NewEncoder(buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(ClassJSONOf(c))
}
