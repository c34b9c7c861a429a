package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/grading"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// rawControl is the first character of s no terminal may get raw (C0 but
// newline, DEL, C1, a bidi override or isolate), or -1.
func rawControl(s string) rune {
	for _, r := range s {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return r
		}
	}
	return -1
}

// The console sink: a manifest's unknown keys (ESC/OSC sequences, CR/LF, a
// forged "class summary" line, raw HTML, a link, a formula) reach the
// grader's console escaped, on the grader's lines only.
func TestGradeConsoleManifestKeysInert(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mallory")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	manifest := "run: \"true\"\n" +
		"\"\\e[2J\\e[H\\e]0;owned\\a\\e]52;c;Y3VybCB8IHNo\\a\": 1\n" +
		"\"x\\r\\nclass summary: all 2 passed\": 2\n" +
		"\"a \\\\| b <img src=x onerror=alert(1)>\": 3\n" +
		"\"[e](javascript:alert(1))\": 4\n" +
		"\"=HYPERLINK(\\\"http://127.0.0.1:9/\\\")\": 5\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "capstone.yaml"), []byte(manifest), 0o644))
	var stdout, stderr bytes.Buffer
	out := filepath.Join(t.TempDir(), "class")
	code := gradeMain([]string{"--out", out, "--wheels", filepath.Join(repoRoot(t), ".cache", "wheels"), dir}, &stdout, &stderr)
	assert.Equal(t, rubric.ExitHarnessError, code)
	console := stdout.String() + stderr.String()
	assert.Equal(t, rune(-1), rawControl(console), "raw control character on the console: %q", console)
	for _, l := range strings.Split(console, "\n") {
		assert.False(t, strings.HasPrefix(l, "class summary"), "a line the grader never wrote: %q", l)
	}
	assert.Contains(t, console, `"\x1b[2J\x1b[H\x1b]0;owned\x07\x1b]52;c;Y3VybCB8IHNo\x07" (line 2): unknown field`)
	assert.Contains(t, console, `"x\r\nclass summary: all 2 passed" (line 3): unknown field`)
}

// Submissions are labelled by identity: the position in the class and the
// directory, never the manifest's name, which is shown quoted as the
// student's text. A manifest calling itself "reference" beside the
// directory "reference" gives two labels, and its lines can be told apart
// in the console and in progress.log.
func TestGradeLabelsByIdentity(t *testing.T) {
	root := t.TempDir()
	mallory := &submission.Submission{Dir: filepath.Join(root, "mallory"), Source: submission.SourceManifest, Manifest: submission.Manifest{Name: "reference", Run: "true"}}
	ref := &submission.Submission{Dir: filepath.Join(root, "reference"), Source: submission.SourceManifest, Manifest: submission.Manifest{Name: "reference", Run: "true"}}
	twin := &submission.Submission{Dir: filepath.Join(root, "other", "reference"), Source: submission.SourceManifest, Manifest: submission.Manifest{Name: "reference", Run: "true"}}
	labels := []string{core.SubmissionLabel(mallory, 0), core.SubmissionLabel(ref, 1), core.SubmissionLabel(twin, 2)}
	assert.Equal(t, []string{"01-mallory", "02-reference", "03-reference"}, labels)
	assert.Equal(t, `01-mallory (its manifest's name: "reference")`, grading.ConsoleName(mallory, labels[0]))
	assert.Equal(t, "02-reference", grading.ConsoleName(ref, labels[1]))
	odd := &submission.Submission{Dir: filepath.Join(root, "eve"), Manifest: submission.Manifest{Name: `a"b \ <i>`}}
	assert.Equal(t, `01-eve (its manifest's name: "a\"b \\ <i>")`, grading.ConsoleName(odd, core.SubmissionLabel(odd, 0)))

	var buf bytes.Buffer
	p := newGradeProgress(&buf, 2, true)
	logs := map[string]*grading.LazyLog{}
	for i, s := range []*submission.Submission{mallory, ref} {
		logs[labels[i]] = grading.NewLazyLog(filepath.Join(root, labels[i]+".log"))
		p.Started(labels[i], grading.ConsoleName(s, labels[i]), "/class/"+labels[i])
		w := p.Scenarios(labels[i], logs[labels[i]])
		_, _ = w.Write([]byte("passed        Instructions inside the data are treated as data  [D4, injection]\n"))
	}
	p.Finished(labels[0], labels[0]+" verdict: NOT PASSED", rubric.OverallNotPassed, true)
	p.Finished(labels[1], labels[1]+" verdict: PASSED", rubric.OverallPassed, true)
	p.out.Close()
	con := buf.String()
	assert.Contains(t, con, "01-mallory: passed        Instructions inside the data")
	assert.Contains(t, con, "02-reference: passed        Instructions inside the data")
	assert.Contains(t, con, "[1/2] 01-mallory verdict")
	assert.Contains(t, con, "[2/2] 02-reference verdict")
	assert.NotContains(t, con, "] reference ", "no line labels a submission by its manifest's name")
	for _, l := range logs {
		require.NoError(t, l.Close())
	}
}
