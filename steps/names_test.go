package steps

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/osb-capstone/acceptance/harness/indexdeny"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

func TestSanitizeKeepsExtension(t *testing.T) {
	long := strings.Repeat("a", 150) + ".json"
	got := sanitize(long)
	assert.LessOrEqual(t, len(got), 100)
	assert.Equal(t, ".json", filepath.Ext(got))
	assert.Equal(t, "a_b_c.txt", sanitize("a/b c.txt"))
	assert.Equal(t, "_", sanitize("..."))
}

func TestSlugIsShortAndStable(t *testing.T) {
	s := &scenario{name: "Under the subject's own policy a non-allowed host is denied and an allowed one is reached"}
	assert.LessOrEqual(t, len(s.slug()), maxSlug)
	assert.Equal(t, s.slug(), s.slug())
	assert.False(t, strings.HasSuffix(s.slug(), "-"))
	assert.Equal(t, "a-run-that-fails-midway-still-cleans-up", (&scenario{name: "A run that fails midway still cleans up"}).slug())
}

func TestPipInstallMatches(t *testing.T) {
	for _, c := range []string{
		"python3 -m pip install -q --user tabulate",
		"pip install pandas",
		"pip3 install --retries 1 x",
		"if python3 -c 'import pandas' ; then :; fi; python3 -m pip install -q --user --index-url https://pypi.org/simple tabulate $extra",
	} {
		assert.True(t, indexdeny.PipInstall.MatchString(c), c)
	}
	for _, c := range []string{"python3 -m pip --version", "pip list", "cd /workspace && python3 analyze.py", "echo pipeline install"} {
		assert.False(t, indexdeny.PipInstall.MatchString(c), c)
	}
}

// A reason quoting a subject's binary stderr or terminal escapes is stored and
// printed as visible text: no control byte reaches junit.xml, report.md or
// the console.
func TestPrintableReason(t *testing.T) {
	assert.Equal(t, "plain\n\ttext é", printable("plain\n\ttext é"))
	assert.Equal(t, `\x1b[2K\rverdict: passed \x00 \xff`, printable("\x1b[2K\rverdict: passed \x00 \xff"))
	assert.Equal(t, `bidi \u202e and \u2066 shown`, printable("bidi \u202e and \u2066 shown"))
	assert.Equal(t, `a\x7fb\x85c`, printable("a\x7fb\u0085c"))
	for _, r := range printable(string([]byte{0, 1, 2, 27, 0x9b, 0xc3, 0x28, 'x'})) {
		assert.False(t, r < 0x20 && r != '\n' && r != '\t', "control %q left", r)
	}
}

func TestReasonSuffixKeepsCharactersWhole(t *testing.T) {
	r := reasonSuffix(rubric.Outcome{Verdict: rubric.Failed, Reason: strings.Repeat("é", 100)})
	assert.True(t, utf8.ValidString(r), "%q", r)
	assert.True(t, strings.HasSuffix(r, "é..."), "%q", r)
}
