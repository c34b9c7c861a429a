// Package inert makes text a submission controls safe to show where people
// read it: Line for every console and log writer (progress.log, the console
// of `grade` and `run`), Quote for an excerpt that must read as a quote,
// Text for stored text that keeps its lines, Markdown for report.md,
// class.md and results.json.
//
// A submission controls much of what the grader prints: its manifest's keys
// and values, its name, the reasons that quote its stderr or its summary's
// error message, its file names, its sandboxes' metadata, its command lines.
// Printed raw, an ESC sequence clears the grader's screen, sets its window
// title or writes its clipboard (OSC 52), and a newline starts a line the
// grader never wrote ("passed … [D4, injection]"). Line escapes every such
// character visibly, so what is printed is the submission's text, shown,
// never obeyed. HTML is escaped by html/template, CSV by its own guard
// (harness/report/classreport).
package inert

import (
	"io"
	"strings"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// Dangerous reports whether r must never reach a terminal or a log raw: the
// C0 controls (newline and tab included), DEL, the C1 controls, the bidi
// overrides and isolates, the line and paragraph separators, and the
// zero-width marks that can reorder or hide text.
func Dangerous(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r < 0xa0:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c: // LRM, RLM, ALM
		return true
	case r == 0x2028, r == 0x2029, r == 0x85: // line and paragraph separators, NEL
		return true
	case r == 0xfeff, r == 0x200b: // BOM / zero-width no-break space, zero-width space
		return true
	}
	return false
}

// Clean reports whether s is valid UTF-8 without a Dangerous rune: Line
// returns it unchanged.
func Clean(s string) bool {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n <= 1) || Dangerous(r) {
			return false
		}
		i += n
	}
	return true
}

// Line makes s one inert line for a terminal or a log: every Dangerous rune
// is written as a visible escape (\n, \r, \t, \x1b, \u202e) and an invalid
// byte as \xNN. The result holds no control character and no line break;
// everything else (letters, accents, emoji, punctuation) is kept as it is.
func Line(s string) string {
	if Clean(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	write(&b, s, false)
	return b.String()
}

// Text is Line for text that keeps its lines and tabs (a reason stored in
// report.json, a page of report.html): newline and tab stay, a CRLF
// becomes a newline, and everything else Line escapes is escaped. The
// renderers that print it make its newlines inert in their own way.
func Text(s string) string {
	if Clean(strings.NewReplacer("\n", "", "\t", "").Replace(s)) {
		return s
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		for j, cell := range strings.Split(line, "\t") {
			if j > 0 {
				b.WriteByte('\t')
			}
			write(&b, cell, false)
		}
	}
	return b.String()
}

// Quote is s as a visible quote: in double quotes, with \ and " escaped as
// well as everything Line escapes, so the quote cannot be closed or
// continued by its content and reads the same on any terminal.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	write(&b, s, true)
	b.WriteByte('"')
	return b.String()
}

func write(b *strings.Builder, s string, quoted bool) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[s[i]>>4])
			b.WriteByte(hexDigits[s[i]&0xf])
		case quoted && (r == '"' || r == '\\'):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case Dangerous(r) && r < 0x100:
			b.WriteString(`\x`)
			b.WriteByte(hexDigits[r>>4])
			b.WriteByte(hexDigits[r&0xf])
		case Dangerous(r):
			b.WriteString(`\u`)
			for shift := 12; shift >= 0; shift -= 4 {
				b.WriteByte(hexDigits[(r>>uint(shift))&0xf])
			}
		default:
			b.WriteRune(r)
		}
		i += n
	}
}

// Markdown makes s inert Markdown (report.md, class.md, results.json's
// output, a model dialogue), in a table cell or in running text: no text of
// a submission becomes markup. Following CommonMark, every ASCII punctuation character (the ones
// a backslash may escape) is backslash-escaped, and <, > and & are written
// as HTML entities, so no link, image, emphasis, code span, autolink, raw
// HTML, entity or table cell can start in it ("\|" stays text and never
// ends a cell). Control characters are shown escaped (Line), and a line
// break becomes the grader's <br>.
func Markdown(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	for i, line := range strings.Split(s, "\n") {
		if i > 0 {
			b.WriteString("<br>")
		}
		for _, r := range Line(line) {
			switch {
			case r == '&':
				b.WriteString("&amp;")
			case r == '<':
				b.WriteString("&lt;")
			case r == '>':
				b.WriteString("&gt;")
			case strings.ContainsRune(asciiPunct, r):
				b.WriteByte('\\')
				b.WriteRune(r)
			default:
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// asciiPunct is CommonMark's ASCII punctuation: each may be backslash-escaped.
const asciiPunct = "!\"#$%'()*+,-./:;=?@[\\]^_`{|}~" // & < > are written as entities

// TextWriter writes through w what is written to it as Text: its lines and
// tabs kept, every other Dangerous rune escaped (godog.log, whose step
// errors and step text can carry the submission's words). Each Write is
// escaped on its own: a rune split across two writes is escaped as its bytes.
func TextWriter(w io.Writer) io.Writer { return textWriter{w} }

type textWriter struct{ w io.Writer }

func (t textWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(t.w, Text(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}
