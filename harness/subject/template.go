package subject

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ReferenceName is the special subject that means "the harness's own
// reference pipeline".
const ReferenceName = "reference"

// Placeholders understood in a command template. {acceptance} is the
// absolute path of the running acceptance binary (so a submission can call the
// bundled reference: "{acceptance} reference --csv {csv} …").
var Placeholders = []string{"{csv}", "{csv_url}", "{question}", "{out}", "{acceptance}"}

// inputPlaceholders are the ones a pipeline is expected to use.
var inputPlaceholders = []string{"{csv}", "{csv_url}", "{question}", "{out}"}

// unknownPlaceholder finds what looks like a placeholder: a lower-case word in
// braces not preceded by $ (a shell ${var} is left to the shell). One that is
// not in Placeholders ({csvv}) is an error, never passed through as text.
var unknownPlaceholder = regexp.MustCompile(`\{[a-z][a-z0-9_]*\}`)

// Template is a parsed subject command.
type Template struct {
	raw       string
	reference bool
	used      map[string]bool
}

// Inputs are the values substituted into a template.
type Inputs struct {
	CSV      string // path of the input CSV on the host
	CSVURL   string // the same data on a loopback URL
	Question string // one-sentence analysis requirement
	Out      string // output directory: must not exist (it is created) or be empty
	// Acceptance is the acceptance binary ({acceptance}); Spec.Executable when empty.
	Acceptance string
}

// Parse parses a subject command string. "reference" (surrounding spaces
// ignored) selects the bundled reference pipeline. Anything else is a shell
// command template; a lower-case {word} that is not a placeholder is an error
// naming it ({csvv}); other text is left untouched (so `python3 -c 'd={}'` and
// a shell "${dir}" are fine).
func Parse(cmd string) (Template, error) {
	trimmed := strings.TrimSpace(cmd)
	if trimmed == "" {
		return Template{}, errors.New("subject: empty command template")
	}
	if strings.ContainsRune(cmd, 0) {
		return Template{}, errors.New("subject: command template contains a NUL byte")
	}
	if trimmed == ReferenceName {
		return Template{raw: ReferenceName, reference: true}, nil
	}
	for _, loc := range unknownPlaceholder.FindAllStringIndex(cmd, -1) {
		if p := cmd[loc[0]:loc[1]]; (loc[0] == 0 || cmd[loc[0]-1] != '$') && !slices.Contains(Placeholders, p) {
			return Template{}, fmt.Errorf("subject: unknown placeholder %s in the command (known: %s)", p, strings.Join(Placeholders, " "))
		}
	}
	t := Template{raw: cmd, used: map[string]bool{}}
	for _, p := range Placeholders {
		if strings.Contains(cmd, p) {
			t.used[p] = true
		}
	}
	return t, nil
}

// MustParse is Parse for constants in tests; it panics on error.
func MustParse(cmd string) Template {
	t, err := Parse(cmd)
	if err != nil {
		panic(err)
	}
	return t
}

// String returns the template as given.
func (t Template) String() string { return t.raw }

// IsReference reports whether the template is the bundled reference pipeline.
func (t Template) IsReference() bool { return t.reference }

// RunsReference reports whether the command runs the bundled reference:
// the reference subject, or {acceptance} followed by the word reference.
func (t Template) RunsReference() bool {
	return t.reference || runsReference.MatchString(t.raw)
}

var runsReference = regexp.MustCompile(`\{acceptance\}['"]?\s+['"]?reference\b`)

// Uses reports whether the template contains the placeholder (e.g. "{csv_url}").
func (t Template) Uses(placeholder string) bool { return t.used[placeholder] }

// Unused lists the placeholders the template does not contain (for a
// warning: a template without {out} cannot know where to write).
func (t Template) Unused() []string {
	if t.reference {
		return nil
	}
	var out []string
	for _, p := range inputPlaceholders {
		if !t.used[p] {
			out = append(out, p)
		}
	}
	return out
}

// Expand substitutes the inputs, each shell-quoted. It fails for the
// reference subject (use Argv) and when a value contains a NUL byte, which
// cannot be passed through a command line.
func (t Template) Expand(in Inputs) (string, error) {
	if t.reference {
		return "", errors.New("subject: the reference subject has no shell template; use Argv")
	}
	vals := map[string]string{
		"{csv}": in.CSV, "{csv_url}": in.CSVURL, "{question}": in.Question, "{out}": in.Out,
		"{acceptance}": in.Acceptance,
	}
	for k, v := range vals {
		if strings.ContainsRune(v, 0) {
			return "", fmt.Errorf("subject: value for %s contains a NUL byte", k)
		}
	}
	// Single left-to-right scan so that a substituted value that happens to
	// contain "{out}" is never expanded a second time.
	var b strings.Builder
	s := t.raw
	for len(s) > 0 {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		matched := false
		for _, p := range Placeholders {
			if strings.HasPrefix(s, p) {
				b.WriteString(Quote(vals[p]))
				s = s[len(p):]
				matched = true
				break
			}
		}
		if !matched {
			b.WriteByte('{')
			s = s[1:]
		}
	}
	return b.String(), nil
}

// Argv returns the argument vector to execute: for the reference subject
// `exe reference --csv … --question … --out …` (no shell involved), otherwise
// `/bin/sh -c <expanded template>`.
func (t Template) Argv(exe string, in Inputs) ([]string, error) {
	if t.reference {
		if exe == "" {
			return nil, errors.New("subject: reference subject needs the harness executable path")
		}
		return []string{exe, ReferenceName, "--csv", in.CSV, "--question", in.Question, "--out", in.Out}, nil
	}
	if in.Acceptance == "" {
		in.Acceptance = exe
	}
	cmd, err := t.Expand(in)
	if err != nil {
		return nil, err
	}
	return []string{"/bin/sh", "-c", cmd}, nil
}

// Quote returns s as a single POSIX shell word: wrapped in single quotes,
// with each embedded single quote replaced by the sequence
// close-quote, backslash, quote, open-quote. Inside single quotes nothing is
// special to the shell: no $, backtick, backslash, newline or glob expansion.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
