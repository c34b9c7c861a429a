package steps

import (
	"fmt"

	"github.com/osb-capstone/acceptance/harness/inert"
)

// printable makes an outcome's reason safe to store: reasons quote what a
// subject wrote (the tail of its stderr, its summary's error message), which
// may be binary or carry terminal escapes. Every control character but
// newline and tab (and every bidi override) becomes a visible escape
// (harness/inert), an invalid byte \xNN. Raw, such bytes made junit.xml
// invalid XML (its CDATA sections are not escaped), landed in report.md,
// and an ESC sequence on the console could rewrite the grader's screen.
// The newlines a stored reason keeps are made inert where it is printed:
// on the console and in progress.log by consoleText (one line, \n shown),
// in Markdown by render.Cell, in HTML by html/template.
func printable(s string) string { return inert.Text(s) }

// consoleText is text a subject controls (a reason, an error, a name) made
// one inert line for the console and progress.log: no control character,
// every newline shown as \n, so it can never start a line of its own (a
// forged "passed … [D4, injection]").
func consoleText(s string) string { return inert.Line(s) }

// quoted is an excerpt of what a subject wrote (the tail of its stderr,
// its summary's error message) as it stands in a reason: visibly a quote,
// in double quotes with its own quotes, backslashes, line breaks and
// control characters escaped (harness/inert.Quote), so where it ends and
// the grader's words resume is never in doubt, on the console, in
// progress.log or in a report.
func quoted(s string) string { return inert.Quote(s) }

// graderText is a progress argument the grader wrote itself, line breaks
// and all: progress prints it as it is.
type graderText string

// consoleArgs makes every text argument of a progress line inert
// (consoleText): strings, errors and Stringers, which may quote a subject.
// Numbers and graderText pass as they are.
func consoleArgs(args []any) []any {
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case graderText:
			out[i] = string(v)
		case string:
			out[i] = consoleText(v)
		case error:
			out[i] = consoleText(v.Error())
		case fmt.Stringer:
			out[i] = consoleText(v.String())
		default:
			out[i] = a
		}
	}
	return out
}
