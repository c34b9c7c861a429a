package submission

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const full = `name: alice-capstone
run: "python3 agent.py --csv {csv} --question {question} --out {out}"
contract: "python3 contract.py --out {out}"
reap: "python3 reap.py"
test:
  unit: "python3 -m pytest -q tests/unit --junitxml {out}/junit-unit.xml"
  integration: "python3 -m pytest -q tests/integration --junitxml {out}/junit-integration.xml"
readme: docs/README.md
model: false
`

func TestParseFullManifest(t *testing.T) {
	m, err := Parse("capstone.yaml", []byte(full))
	require.NoError(t, err)
	assert.Equal(t, "alice-capstone", m.Name)
	assert.Equal(t, "python3 reap.py", m.Reap)
	assert.Contains(t, m.Test.Integration, "tests/integration")
	assert.Equal(t, "docs/README.md", m.Readme)
	assert.Len(t, m.Commands(), 5)
}

func TestParseMinimalManifestDefaults(t *testing.T) {
	m, err := Parse("capstone.yaml", []byte("run: ./agent {csv} {out}\n"))
	require.NoError(t, err)
	assert.Equal(t, "README.md", m.Readme)
	assert.Empty(t, m.Contract)
	assert.False(t, m.Model)
}

// An unknown key is the submission's text: its error names it quoted and
// escaped (harness/inert), one line, never a raw control character, so a
// key cannot clear the grader's screen, set its title, write its clipboard
// (OSC 52) or print a forged line such as "class summary: all 2 passed".
func TestManifestErrorsStayInert(t *testing.T) {
	in := "run: x\n\"\\e[2J\\e]0;owned\\a\\e]52;c;Y3VybCB8IHNo\\a\\nclass summary: all 2 passed\\r\": 1\n" +
		"\"<img src=x onerror=alert(1)>\": 2\n\"=HYPERLINK(\\\"http://x\\\")\": 3\n\"\\u202eevil\": 4\n" +
		"test:\n  \"\\e[31mred\": pytest\nname: \"re\\u202eference\"\n"
	_, err := Parse("sub/capstone.yaml", []byte(in))
	require.Error(t, err)
	msg := err.Error()
	for _, r := range msg {
		assert.False(t, r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e), "raw %U in %q", r, msg)
	}
	assert.Contains(t, msg, `"\x1b[2J\x1b]0;owned\x07\x1b]52;c;Y3VybCB8IHNo\x07\nclass summary: all 2 pass"… (line 2): unknown field`, "quoted, escaped, cut to 60 characters")
	assert.Contains(t, msg, `test."\x1b[31mred" (line 7): unknown field`)
	assert.Contains(t, msg, `"\u202eevil" (line 5): unknown field`)
	assert.Contains(t, msg, "name: must not contain control characters")
	// A thousand unknown keys are one bounded error.
	var b strings.Builder
	b.WriteString("run: x\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	_, err = Parse("capstone.yaml", []byte(b.String()))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "and 990 more")
	assert.Less(t, len(err.Error()), 2000)
}

// Each bad field gets its own clear error, all reported at once.
func TestParseReportsEveryBadField(t *testing.T) {
	cases := map[string][]string{
		"":                                   {"run: is required"},
		"name: x\n":                          {"run: is required"},
		"run: 5\n":                           {"run (line 1): must be a string, got the number 5"},
		"run: [a, b]\n":                      {"run (line 1): must be a string, got a list"},
		"run: x\nrun: y\n":                   {"run (line 2): given twice"},
		"run: x\nmodle: true\n":              {"modle (line 2): unknown field"},
		"run: x\nmodel: yes please\n":        {"model (line 2): must be true or false"},
		"run: x\ntest: pytest\n":             {"test (line 2): must be a mapping"},
		"run: x\ntest:\n  e2e: pytest\n":     {"test.e2e (line 3): unknown field"},
		"run: x\ntest:\n  unit: 3\n":         {"test.unit (line 3): must be a string"},
		"run: x\ncontract: ''\n":             {"contract: must not be empty"},
		"run: x\nreadme: /etc/passwd\n":      {`readme: "/etc/passwd" must be a path inside`},
		"run: x\nreadme: ../x.md\n":          {"must be a path inside"},
		"- run: x\n":                         {"must be a mapping of fields"},
		"run: [\n":                           {"is not valid YAML"},
		"run: x\nname: \"a\\e[2Kb\"\n":       {"name: must not contain control characters"},
		"run: 1\ncontract: {}\nreap: null\n": {"run (line 1)", "contract (line 2): must be a string, got a mapping", "reap (line 3): must be a string, got nothing (null)"},
	}
	for in, wants := range cases {
		_, err := Parse("capstone.yaml", []byte(in))
		require.Error(t, err, "input %q", in)
		for _, w := range wants {
			assert.Contains(t, err.Error(), w, "input %q", in)
		}
		assert.True(t, strings.HasPrefix(err.Error(), "capstone.yaml: "), err.Error())
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(dir)
	require.ErrorIs(t, err, ErrNoManifest)

	require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestName), []byte(full), 0o644))
	s, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, dir, s.Dir)
	assert.Equal(t, SourceManifest, s.Source)
	assert.Equal(t, "alice-capstone", s.Name())

	_, err = Load(filepath.Join(dir, ManifestName))
	require.ErrorContains(t, err, "is not a directory")

	// a capstone.yaml that is a FIFO (or a device) is refused at once, never
	// waited on
	fifo := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(fifo, ManifestName), 0o644))
	done := make(chan error, 1)
	go func() { _, err := Load(fifo); done <- err }()
	select {
	case err := <-done:
		require.ErrorContains(t, err, "is not a regular file")
	case <-time.After(10 * time.Second):
		t.Fatal("Load blocked on a FIFO capstone.yaml")
	}
	_, err = Load(filepath.Join(dir, "nope"))
	require.Error(t, err)
}

func TestFromCommandIsRunOnly(t *testing.T) {
	s, err := FromCommand("true")
	require.NoError(t, err)
	assert.Equal(t, SourceCommand, s.Source)
	assert.Equal(t, "true", s.Manifest.Run)
	assert.Empty(t, s.Manifest.Contract)
	assert.Contains(t, s.Missing("contract"), "the submission declares no contract check")
	assert.Contains(t, s.Missing("contract"), "run-only")

	ref, err := FromCommand(" reference ")
	require.NoError(t, err)
	assert.Equal(t, SourceBuiltin, ref.Source)
	assert.NotEmpty(t, ref.Manifest.Contract)
	assert.NotEmpty(t, ref.Manifest.Reap)

	_, err = FromCommand("  ")
	require.Error(t, err)
}

// A field with the wrong type is reported once, not also as empty.
func TestParseReportsAFieldOnce(t *testing.T) {
	_, err := Parse("capstone.yaml", []byte("run: 5\n"))
	require.Error(t, err)
	assert.Equal(t, "capstone.yaml: run (line 1): must be a string, got the number 5", err.Error())
}

// TestLoadRefusesASymlinkedManifest: a capstone.yaml linked to a file the
// submission wants printed (its lines once appeared in the YAML error) is
// refused, and the error never shows the target's name or content.
func TestLoadRefusesASymlinkedManifest(t *testing.T) {
	dir, elsewhere := t.TempDir(), t.TempDir()
	target := filepath.Join(elsewhere, "shadow")
	require.NoError(t, os.WriteFile(target, []byte("root:$6$secret-hash:19000:0:99999:7:::\n"), 0o600))
	require.NoError(t, os.Symlink(target, filepath.Join(dir, ManifestName)))
	_, err := Load(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "symbolic link")
	assert.NotContains(t, err.Error(), "secret-hash")
	assert.NotContains(t, err.Error(), "shadow")
}

// TestParseRefusesASecondDocument: whatever follows a --- is not silently
// ignored; and an unknown placeholder in a command is an error naming it.
func TestParseRefusesASecondDocument(t *testing.T) {
	for _, b := range []string{
		"run: python3 a.py --out {out}\n---\nrun: python3 b.py --out {out}\n",
		"run: python3 a.py --out {out}\n---\n[unclosed\n",
		"run: python3 a.py --out {out}\n---\n",
	} {
		_, err := Parse("capstone.yaml", []byte(b))
		require.Error(t, err, b)
		assert.Contains(t, err.Error(), "second YAML document", b)
	}
	for _, b := range []string{"run: python3 a.py --out {out}\n", "---\nrun: python3 a.py --out {out}\n", "run: python3 a.py --out {out}\n...\n"} {
		_, err := Parse("capstone.yaml", []byte(b))
		assert.NoError(t, err, b)
	}

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, ManifestName), []byte("run: python3 a.py --csv {csvv} --out {out}\n"), 0o644))
	_, err := Load(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "run: subject: unknown placeholder {csvv}")
}
