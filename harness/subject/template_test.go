package subject

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var hostile = []string{
	``,
	`plain`,
	`with spaces  and	tabs`,
	`it's a "quote"`,
	`'`,
	`''''`,
	`$(touch MARKER)`,
	"`touch MARKER`",
	`'; touch MARKER; echo '`,
	"line1\ntouch MARKER\nline3",
	`$HOME ${PATH} $$ $1 \$ \\ \' \"`,
	`* ? [a-z] ~ ; & | < > ( ) { } #`,
	`{out} {csv}`,
	"tricky'\n$(touch MARKER)'`touch MARKER`",
	"ünïcødé ✓ — 数据",
}

// Each hostile value survives a round trip through /bin/sh as exactly one
// argument and never executes anything.
func TestQuoteRoundTripNoInjection(t *testing.T) {
	dir := t.TempDir()
	for _, v := range hostile {
		cmd := exec.Command("/bin/sh", "-c", `printf '%s' `+Quote(v)+` ; printf '|%s' "$#"`, "sh")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "value %q", v)
		assert.Equal(t, v+"|0", string(out), "value %q", v)

		// As a positional argument count: exactly one word.
		cmd = exec.Command("/bin/sh", "-c", `set -- `+Quote(v)+`; printf '%s' "$#"`)
		cmd.Dir = dir
		out, err = cmd.CombinedOutput()
		require.NoError(t, err)
		assert.Equal(t, "1", string(out), "value %q must be one word", v)
	}
	_, err := os.Stat(filepath.Join(dir, "MARKER"))
	assert.True(t, os.IsNotExist(err), "an injected command ran")
}

func TestExpandSubstitutesOnceAndLeavesOtherBraces(t *testing.T) {
	tpl := MustParse(`python3 -c 'd={}' {csv} {csv_url} {question} {out} ${HOME} ${dir} {1}`)
	got, err := tpl.Expand(Inputs{CSV: "/a b.csv", CSVURL: "http://127.0.0.1:1/x.csv", Question: "{out}", Out: "/o"})
	require.NoError(t, err)
	assert.Equal(t, `python3 -c 'd={}' '/a b.csv' 'http://127.0.0.1:1/x.csv' '{out}' '/o' ${HOME} ${dir} {1}`, got)
	assert.True(t, tpl.Uses("{csv_url}"))
	assert.False(t, MustParse("run {csv}").Uses("{csv_url}"))
	assert.Equal(t, []string{"{csv_url}", "{question}", "{out}"}, MustParse("run {csv}").Unused())
	assert.Empty(t, tpl.Unused())
}

func TestParse(t *testing.T) {
	_, err := Parse("   ")
	assert.Error(t, err)
	_, err = Parse("a\x00b")
	assert.Error(t, err)
	ref, err := Parse(" reference ")
	require.NoError(t, err)
	assert.True(t, ref.IsReference())
	_, err = ref.Expand(Inputs{})
	assert.Error(t, err)
	_, err = MustParse("x {question}").Expand(Inputs{Question: "a\x00"})
	assert.Error(t, err)
}

func TestReferenceArgvNoShell(t *testing.T) {
	in := Inputs{CSV: "/d/s.csv", Question: "$(rm -rf /) 'x'", Out: "/o"}
	argv, err := MustParse("reference").Argv("/bin/acceptance", in)
	require.NoError(t, err)
	assert.Equal(t, []string{"/bin/acceptance", "reference", "--csv", "/d/s.csv", "--question", "$(rm -rf /) 'x'", "--out", "/o"}, argv)
	_, err = MustParse("reference").Argv("", in)
	assert.Error(t, err)

	argv, err = MustParse("run {question}").Argv("", in)
	require.NoError(t, err)
	assert.Equal(t, []string{"/bin/sh", "-c", `run '$(rm -rf /) '\''x'\'''`}, argv)
}

// TestParseRefusesUnknownPlaceholders: a misspelt placeholder ({csvv}) would
// reach the shell as literal text and the submission would fail for a reason
// it cannot see; it is an error naming it. Shell ${var} and other braces stay.
func TestParseRefusesUnknownPlaceholders(t *testing.T) {
	for cmd, bad := range map[string]string{
		"python3 agent.py --csv {csvv} --out {out}":     "{csvv}",
		"python3 agent.py --csv {csv} --out {output}":   "{output}",
		"{acceptance} reference --question {questions}": "{questions}",
		"run {csv}{csvv}": "{csvv}",
	} {
		_, err := Parse(cmd)
		require.Error(t, err, cmd)
		assert.Contains(t, err.Error(), "unknown placeholder "+bad, cmd)
		assert.Contains(t, err.Error(), "{csv} {csv_url} {question} {out} {acceptance}", cmd)
	}
	for _, ok := range []string{`out={out}; python3 x.py --out "${out}" --dir "${dir}"`, `python3 -c 'd={}; e={1: 2}'`, `echo {A} {}`} {
		_, err := Parse(ok)
		assert.NoError(t, err, ok)
	}
}
