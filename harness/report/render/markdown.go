package render

import (
	"fmt"
	"io"
	"net/url"
	"path"
	"sort"
	"strings"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// WriteMarkdown renders report.md.
func WriteMarkdown(w io.Writer, d report.Document) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Acceptance report: %s\n\n", VerdictTitle(d.Verdict))
	fmt.Fprintf(&b, "**Verdict: %s** (exit code %d): %s\n\n", VerdictTitle(d.Verdict), d.ExitCode, Cell(d.VerdictReason))
	fmt.Fprintf(&b, "**Score: %s of %s measured (measured %s of %s)**\n\n",
		rubric.Num(d.Score.Earned), rubric.Num(d.Score.Measured), rubric.Num(d.Score.Measured), rubric.Num(d.Score.Total))
	if d.Aborted != "" {
		fmt.Fprintf(&b, "> **Run aborted:** %s. Only what was measured before that is reported.\n\n", Cell(d.Aborted))
	}
	if h := d.Confinement.Header(); h != "" {
		fmt.Fprintf(&b, "> **%s**\n\n", Cell(h))
	}
	writePreflight(&b, d.Preflight)
	if d.JournalRefused != "" {
		fmt.Fprintf(&b, "> **Journal altered during the run:** %s\n\n", Cell(d.JournalRefused))
	}
	if d.JournalSkipped > 0 {
		fmt.Fprintf(&b, "> %d torn journal line(s) could not be read (the process died while writing).\n\n", d.JournalSkipped)
	}

	b.WriteString("| Run | |\n|---|---|\n")
	fmt.Fprintf(&b, "| Run ID | %s |\n", code(d.RunID))
	fmt.Fprintf(&b, "| Target | %s (%s) |\n", code(d.Target), d.TargetKind)
	fmt.Fprintf(&b, "| Subject | %s |\n", code(d.Subject))
	fmt.Fprintf(&b, "| Seed | %d |\n", d.Seed)
	if c := d.Confinement; c != nil {
		fmt.Fprintf(&b, "| Confinement | level %s, %s (%d commands, %d connections refused) |\n", c.Level, c.Mode, c.Commands, c.Refused)
		if len(c.RanReference) > 0 {
			fmt.Fprintf(&b, "| Ran the bundled reference | %s |\n", Cell(strings.Join(c.RanReference, ", ")))
		}
	}
	if d.Tags != "" {
		fmt.Fprintf(&b, "| Tags | %s |\n", code(d.Tags))
	}
	fmt.Fprintf(&b, "| Started | %s |\n", d.StartedAt.Format("2006-01-02T15:04:05Z07:00"))
	fmt.Fprintf(&b, "| Ended | %s |\n", d.EndedAt.Format("2006-01-02T15:04:05Z07:00"))
	if len(d.Versions) > 0 {
		keys := make([]string, 0, len(d.Versions))
		for k := range d.Versions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var vs []string
		for _, k := range keys {
			vs = append(vs, k+" "+d.Versions[k])
		}
		fmt.Fprintf(&b, "| Versions | %s |\n", Cell(strings.Join(vs, ", ")))
	}
	if len(d.StandIns) > 0 {
		fmt.Fprintf(&b, "\n> **Stand-ins:** this target's %s %s built by this project, not OpenSandbox's own. "+
			"An entry whose verdict rests on one says so in its verdict cell (*stand-in: …*): it shows the control plane's "+
			"behaviour with that stand-in, not OpenSandbox's.\n", report.EntryRow{StandIns: d.StandIns}.StandInList(), plural(len(d.StandIns), "is", "are"))
	}

	b.WriteString("\n## Score by scoring item\n\n")
	b.WriteString("Each item earns weight × passed/inputs and counts weight × measured/inputs as measured; ")
	b.WriteString("not-measured inputs (timeouts included) are left out of both; a flaky input is measured and earns nothing.\n\n")
	b.WriteString("| Item | Weight | Measured | Earned | Fed by |\n|---|---:|---:|---:|---|\n")
	for _, s := range d.Scoring {
		ins := make([]string, len(s.Inputs))
		for i, in := range s.Inputs {
			ins[i] = string(in)
		}
		fmt.Fprintf(&b, "| %s: %s | %d | %s | %s | %s |\n", s.Item, Cell(s.Title), s.Weight,
			rubric.Num(s.Measured), rubric.Num(s.Earned), strings.Join(ins, ", "))
	}
	fmt.Fprintf(&b, "| **Total** | %s | %s | %s | |\n", rubric.Num(d.Score.Total), rubric.Num(d.Score.Measured), rubric.Num(d.Score.Earned))

	if d.Final != nil {
		writeFinalMarkdown(&b, d.Final)
	}

	section := func(title string, rows []report.EntryRow) {
		fmt.Fprintf(&b, "\n## %s\n\n", title)
		b.WriteString("| ID | Verdict | Reason | Evidence | Reproduce |\n|---|---|---|---|---|\n")
		for _, r := range rows {
			v := verdictCell(r.Verdict, r.Category)
			if len(r.StandIns) > 0 {
				v += " *(stand-in: " + r.StandInList() + ")*"
			}
			fmt.Fprintf(&b, "| **%s** %s | %s | %s | %s | %s |\n", r.ID, Cell(r.Title), v,
				Cell(r.Reason), evidenceLinks(r.Evidence), code(r.Reproduce))
		}
	}
	section("Acceptance criteria", d.Criteria)
	section("Milestones", d.Milestones)
	section("Fault drills", d.Drills)

	b.WriteString("\n## Evidence drift\n\n")
	if len(d.Drift) == 0 {
		b.WriteString("No evidence was compared with a baseline.\n")
	} else {
		b.WriteString("Drift is informational: it never fails a criterion. It shows where normalised evidence differs from the stored baseline (e.g. after an OpenSandbox upgrade).\n\n")
		b.WriteString("| ID | Status | Baseline | Detail |\n|---|---|---|---|\n")
		for _, dr := range d.Drift {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", dr.ID, dr.Status, code(dr.Baseline), Cell(dr.Detail))
		}
		for _, dr := range d.Drift {
			if dr.Diff == "" {
				continue
			}
			diff := printableBlock(strings.TrimRight(dr.Diff, "\n"))
			f := fence(diff)
			fmt.Fprintf(&b, "\n<details><summary>%s: diff against the baseline</summary>\n\n%sdiff\n%s\n%s\n\n</details>\n", Cell(string(dr.ID)), f, diff, f)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// evidenceLinks links a row's evidence files: the only links of report.md,
// and the grader's (the paths are the bundle's own, evidence/<id>/<name>).
// The text is escaped like any cell, the destination percent-encoded, so
// neither can close the link or start another.
func evidenceLinks(ev []string) string {
	if len(ev) == 0 {
		return ""
	}
	links := make([]string, len(ev))
	for i, e := range ev {
		links[i] = fmt.Sprintf("[%s](%s)", Cell(inert.Line(path.Base(e))), linkPath(e))
	}
	return strings.Join(links, "<br>")
}

// Link is a Markdown link the grader makes to a relative path (a bundle's
// report from class.md): its text escaped (Cell), its destination
// percent-encoded (linkPath).
func Link(text, relPath string) string {
	return "[" + Cell(text) + "](" + linkPath(relPath) + ")"
}

// linkPath is a relative path as a Markdown link destination: every
// segment percent-encoded (url.PathEscape), so no (, ), <, >, space or
// scheme ("javascript:") survives as such.
func linkPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
		if i == 0 && strings.Contains(segs[i], ":") {
			segs[i] = "./" + segs[i] // never read as a scheme
		}
	}
	return strings.Join(segs, "/")
}

// Cell makes s inert Markdown (report.md, class.md, results.json's output),
// in a table cell or in running text: harness/inert.Markdown.
func Cell(s string) string { return inert.Markdown(s) }

// fence is a code fence longer than any run of backticks in s, so s
// cannot close it.
func fence(s string) string {
	n, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			n = max(n, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, n+1))
}

// printableBlock is a code block's text: each line inert (harness/inert),
// the line breaks kept.
func printableBlock(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = inert.Line(l)
	}
	return strings.Join(lines, "\n")
}

// code renders s as inline code inside a table cell. A code span is used
// only when s holds nothing a table or a code span could misread (no `|`,
// no backslash, no backtick); anything else is shown as escaped text in
// <code> (Cell), so a "\|" can never end the cell.
func code(s string) string {
	if s == "" {
		return ""
	}
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if inert.Clean(s) && !strings.ContainsAny(s, "|\\`") {
		return "`" + s + "`"
	}
	return "<code>" + Cell(s) + "</code>"
}

// writePreflight renders the target preflight section (never scored).
func writePreflight(b *strings.Builder, p *report.Preflight) {
	if p == nil {
		return
	}
	state := "passed"
	if !p.Passed {
		state = "FAILED: " + Cell(p.Reason)
	}
	fmt.Fprintf(b, "## Target preflight (not scored): %s\n\n", state)
	b.WriteString("The harness's own contract check of the server, run before grading. It grades the server, not the submission.\n\n")
	b.WriteString("| check | result | detail |\n|---|---|---|\n")
	for _, c := range p.Checks {
		r := "passed"
		if !c.Passed {
			r = "**failed**"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", Cell(c.Name), r, Cell(c.Detail))
	}
	b.WriteString("\n")
}
