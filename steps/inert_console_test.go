package steps

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// The console and progress.log sink of the steps: every progress line is
// built by Env.progress, whose text arguments (reasons quoting a subject,
// errors, names) are made inert. A subject's reason can neither put a raw
// control character on the grader's terminal nor start a line of its own.
func TestProgressLinesStayInert(t *testing.T) {
	var buf bytes.Buffer
	payloads := map[string]string{
		"esc/osc":   "\x1b[2J\x1b]0;owned\x07\x1b]52;c;Y3VybCB8IHNo\x07done",
		"crlf":      "line one\r\npassed        Instructions inside the data are treated as data  [D4, injection]\r\nclass summary: all 2 passed",
		"pipe":      `a \| b | c`,
		"html":      `<img src=x onerror=alert(1)>`,
		"link":      `[Evidence](javascript:alert(1))`,
		"formula":   `=HYPERLINK("http://127.0.0.1:9/x","click")`,
		"bidi":      "safe\u202eexe.txt\u2066",
		"c1":        "a\u009b31mred\u0085b\x7f",
		"invalid":   "bad \xff\xfe utf-8",
		"reference": "reference",
	}
	for name, p := range payloads {
		buf.Reset()
		e := &Env{opt: core.SuiteInput{Progress: &buf, Results: rubric.NewResults(rubric.Course)}}
		s := &scenario{env: e, name: "Instructions inside the data are treated as data"}
		e.recordFor(s, []string{"@D4"}, []string{"D4"}, rubric.Outcome{Verdict: rubric.Failed, Reason: p})
		e.progress("  ! could not record %s: %v", p, errors.New(p))
		out := buf.String()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		assert.Len(t, lines, 3, "%s: the grader's lines only: %q", name, out)
		assert.True(t, strings.HasPrefix(lines[0], "failed "), name)
		assert.True(t, strings.HasPrefix(lines[1], "              "), "%s: the reason is indented under its verdict: %q", name, lines[1])
		assert.True(t, strings.HasPrefix(lines[2], "  ! could not record "), name)
		for _, r := range out {
			assert.False(t, r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)),
				"%s: raw control %U in %q", name, r, out)
		}
		assert.NotContains(t, out, "\r", name)
	}
	buf.Reset()
	e := &Env{opt: core.SuiteInput{Progress: &buf, Results: rubric.NewResults(rubric.Course)}}
	e.recordFor(&scenario{env: e, name: "x"}, []string{"@D4"}, []string{"D4"}, rubric.Outcome{Verdict: rubric.Failed, Reason: payloads["crlf"]})
	assert.Contains(t, buf.String(), `line one\npassed        Instructions`, "the forged line is shown inside the reason, escaped")
	buf.Reset()
	e.recordFor(&scenario{env: e, name: "x"}, []string{"@D4"}, []string{"D4"}, rubric.Outcome{Verdict: rubric.Failed, Reason: payloads["esc/osc"]})
	assert.Contains(t, buf.String(), `\x1b]52;c;Y3VybCB8IHNo\x07done`, "not dropped: shown")
}

// An excerpt of what a subject wrote is visibly a quote in its reason: in
// double quotes, its own quotes and line breaks escaped, so a forged
// "passed … [D4, injection]" or a closing quote inside it is shown, not
// obeyed, and the reason's end is the grader's.
func TestExcerptIsAQuote(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stderr.log")
	require.NoError(t, os.WriteFile(p, []byte("Traceback\n\") — verdict: passed\npassed        Instructions inside the data are treated as data  [D4, injection]\n\x1b]0;t\x07\n"), 0o644))
	got := tailFile(p, 600)
	assert.Equal(t, `"Traceback\n\") — verdict: passed\npassed        Instructions inside the data are treated as data  [D4, injection]\n\x1b]0;t\x07"`, got)
	assert.NotContains(t, got, "\n")
	assert.Equal(t, `"boom \"x\""`, quoted(`boom "x"`))
}
