package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/submission"
)

func TestCommandKey(t *testing.T) {
	assert.Equal(t, "contract.py", CommandKey("python3 contract.py --out {out}"))
	assert.Equal(t, "tests/unit", CommandKey("python3 -m pytest -q tests/unit --junitxml {out}/junit-unit.xml"))
	assert.Equal(t, "reference", CommandKey("{acceptance} reference --csv {csv}"))
	assert.Equal(t, "make test", CommandKey("make test"))
	assert.Equal(t, "reference env-in-prompt", CommandKey("{acceptance} reference --agent --agent-flaw env-in-prompt --csv {csv}"))
}

// TestNamesCommand: a README names a command when the key's words stand in
// order on one line, flags between them allowed; not when they are split
// across lines or out of order.
func TestNamesCommand(t *testing.T) {
	key := "reference env-in-prompt"
	assert.True(t, NamesCommand([]byte("run `acceptance reference --agent --agent-flaw env-in-prompt --csv x`\n"), key))
	assert.True(t, NamesCommand([]byte("acceptance reference env-in-prompt"), key))
	assert.False(t, NamesCommand([]byte("acceptance reference --agent\n--agent-flaw env-in-prompt\n"), key))
	assert.False(t, NamesCommand([]byte("env-in-prompt before reference\n"), key))
	assert.False(t, NamesCommand([]byte("# nothing here\n"), key))
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	sub := &submission.Submission{Dir: dir, Source: submission.SourceManifest, Manifest: submission.Manifest{
		Run: "python3 agent.py --csv {csv}", Reap: "python3 reap.py", Readme: "README.md"}}
	_, err := Check(sub)
	require.ErrorContains(t, err, "no README at README.md")

	write := func(s string) { require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte(s), 0o644)) }
	write("# agent\nRun `python3 agent.py`.\n")
	_, err = Check(sub)
	require.ErrorContains(t, err, `reap ("reap.py")`)

	write("# agent\nRun `python3 agent.py`, clean up with `python3 reap.py`.\n")
	msg, err := Check(sub)
	require.NoError(t, err)
	assert.Contains(t, msg, "names its 2 command(s)")

	write("# agent\nagent.py reap.py\n" + strings.Repeat("line\n", 100))
	_, err = Check(sub)
	require.ErrorContains(t, err, "one page is at most 80 lines")
}

// TestCheckNeverThroughALink: a README in a directory that is a link
// to elsewhere (readme: docs/README.md, docs → another tree) is not read.
func TestCheckNeverThroughALink(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "README.md"), []byte("# agent\nagent.py\n"), 0o644))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(dir, "docs")))
	sub := &submission.Submission{Dir: dir, Source: submission.SourceManifest, Manifest: submission.Manifest{
		Run: "python3 agent.py --csv {csv}", Readme: "docs/README.md"}}
	_, err := Check(sub)
	require.ErrorContains(t, err, "the README path docs/README.md goes through a symbolic link")
	assert.NotContains(t, err.Error(), elsewhere)

	require.NoError(t, os.Remove(filepath.Join(dir, "docs")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "docs"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "docs", "README.md"), []byte("# agent\nRun `python3 agent.py`.\n"), 0o644))
	_, err = Check(sub)
	require.NoError(t, err)
}
