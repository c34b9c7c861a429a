//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report/render"
)

// TestConfinedOfficialJSSDK grades a submission that drives the bundled
// server with the official JavaScript SDK (mock-server/testdata/sdk, direct
// endpoints and the server proxy) from inside its confinement: every call
// reaches the server and its own sandboxes' execd, none is refused, and the
// record says the command was confined. (The official Python SDK is covered
// confined by TestStudentSubjectDrills.)
func TestConfinedOfficialJSSDK(t *testing.T) {
	e := requireSubjectEnv(t)
	gradingEnv(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed (make deps)")
	}
	mods := filepath.Join(e.root, "mock-server", "testdata", "sdk", "node_modules")
	if _, err := os.Stat(filepath.Join(mods, "@alibaba-group", "opensandbox", "dist", "index.js")); err != nil {
		t.Skipf("the official JS SDK is not installed under %s (make deps): %v", mods, err)
	}
	src, err := os.ReadFile(filepath.Join(e.root, "mock-server", "jssdk_test.go"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)const jsSDKScript = `\n(.*?)`\n").FindSubmatch(src)
	require.NotNil(t, m, "the JS SDK script of mock-server/jssdk_test.go")
	dir := filepath.Join(t.TempDir(), "js-submission")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	// A student's submission carries its node_modules: a copy, not a link.
	out, err := exec.Command("cp", "-rL", mods, filepath.Join(dir, "node_modules")).CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sdk.mjs"), []byte(strings.ReplaceAll(string(m[1]), "SDK_ENTRY", "@alibaba-group/opensandbox")), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "capstone.yaml"), []byte(
		`run: "`+node+` sdk.mjs > {out}/direct.json; USE_SERVER_PROXY=1 `+node+` sdk.mjs > {out}/proxy.json"`+"\n"), 0o644))

	class := filepath.Join(t.TempDir(), "class")
	var stdout, stderr bytes.Buffer
	gradeMain(runArgs(t, class, "--tags", "@criterion:isolation", "--seed", "5", dir), &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	run := filepath.Join(class, "01-js-submission", "evidence", "subject-sales")
	for _, name := range []string{"direct.json", "proxy.json"} {
		b, err := os.ReadFile(filepath.Join(run, "out", name))
		require.NoError(t, err, name)
		var got map[string]any
		require.NoError(t, json.Unmarshal(b, &got), string(b))
		assert.Nil(t, got["error"], "%s: %s", name, b)
		assert.Equal(t, []any{"hello", "42"}, got["okStdout"], name)
		assert.Equal(t, true, got["binOK"], name)
		assert.Equal(t, "DOCKER::SANDBOX_NOT_FOUND", got["afterKill"], name)
	}
	var rec struct {
		Result struct {
			Confinement struct {
				Mode         string            `json:"mode"`
				RefusedCount int               `json:"refused_count"`
				Refused      []json.RawMessage `json:"refused"`
				Broken       []json.RawMessage `json:"broken"`
			} `json:"confinement"`
		} `json:"result"`
	}
	b, err := os.ReadFile(filepath.Join(run, "run.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rec))
	assert.Equal(t, "confined", rec.Result.Confinement.Mode)
	assert.Zero(t, rec.Result.Confinement.RefusedCount, "no SDK call was refused: %s (the grader's breaks: %s)",
		rec.Result.Confinement.Refused, rec.Result.Confinement.Broken)
}

// TestGradeRefusesUnconfinedClass: on a machine that cannot confine, grade
// refuses a class (exit 2, saying why) unless --insecure-no-confinement,
// and then every report says in its header that confinement was off.
func TestGradeRefusesUnconfinedClass(t *testing.T) {
	gradingEnv(t)
	old, oldUID := confineAvailable, confineUIDAvailable
	confineAvailable = func() string { return "test: this machine cannot confine" }
	confineUIDAvailable = func() string { return "test: nor at level uid" }
	t.Cleanup(func() { confineAvailable, confineUIDAvailable = old, oldUID })
	subs := t.TempDir()
	var dirs []string
	for _, n := range []string{"a", "b"} {
		d := filepath.Join(subs, n)
		require.NoError(t, os.MkdirAll(d, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(d, "capstone.yaml"), []byte("run: \"true\"\n"), 0o644))
		dirs = append(dirs, d)
	}
	class := filepath.Join(t.TempDir(), "class")
	var stdout, stderr bytes.Buffer
	code := gradeMain(runArgs(t, class, append([]string{"--tags", "@criterion:function"}, dirs...)...), &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "cannot be confined here (test: this machine cannot confine)")
	assert.Contains(t, stderr.String(), "--insecure-no-confinement")
	_, err := os.Stat(class)
	assert.True(t, os.IsNotExist(err) || isEmptyDir(class), "nothing was graded")

	if testing.Short() {
		return
	}
	requireSandboxes(t)
	stdout.Reset()
	stderr.Reset()
	gradeMain(runArgs(t, class, append([]string{"--tags", "@criterion:function", "--insecure-no-confinement"}, dirs...)...), &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	for _, n := range []string{"01-a", "02-b"} {
		b := readBundle(t, filepath.Join(class, n))
		require.NotNil(t, b.doc.Confinement, n)
		assert.Equal(t, "off", b.doc.Confinement.Mode, n)
		assert.Contains(t, b.md, "> **Confinement OFF", n)
		assert.Contains(t, b.md, render.Cell("--insecure-no-confinement was given"), n) // report.md escapes its text
	}
}
