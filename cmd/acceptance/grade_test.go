package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Integration tests of `acceptance grade`.

func testdataSubmission(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	require.NoError(t, err)
	return p
}

func TestGradeUsageErrors(t *testing.T) {
	wheels := filepath.Join(repoRoot(t), ".cache", "wheels")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no submission", nil, "name at least one submission directory"},
		{"pattern matches nothing", []string{"testdata/nothing-*"}, `pattern "testdata/nothing-*" matches nothing`},
		{"bad parallel", []string{"--parallel", "0", "testdata/empty"}, "--parallel must be at least 1"},
		{"run's --subject is not a grade flag", []string{"--subject", "true", "testdata/empty"}, "flag provided but not defined: -subject"},
		{"no manifest", []string{"testdata"}, "no capstone.yaml at the submission's root"},
		{"every manifest broken", []string{"testdata/broken"}, "run (line 1): must be a string, got the number 5; test (line 2): must be a mapping"},
		{"shard out of range", []string{"--shard", "4/3", "testdata/empty"}, "K must be between 1 and N (3)"},
		{"shard not K/N", []string{"--shard", "2", "testdata/empty"}, "--shard must be K/N"},
		// Flags after the submission directories are flags, not directories.
		{"flag after the submissions", []string{"testdata/broken", "--parallel", "0"}, "--parallel must be at least 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "class")
			var stdout, stderr bytes.Buffer
			code := gradeMain(append([]string{"--out", out, "--wheels", wheels}, tc.args...), &stdout, &stderr)
			assert.Equal(t, rubric.ExitHarnessError, code, "stderr: %s", stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
			_, err := os.Stat(out)
			assert.True(t, os.IsNotExist(err), "a usage error leaves no class directory behind")
		})
	}
}

func requireNothingEarned(t *testing.T, dir string) *bundle {
	t.Helper()
	b := readBundle(t, dir)
	assert.Equal(t, 0.0, b.doc.Score.Earned, "a submission that does nothing earns nothing")
	assert.Equal(t, rubric.OverallNotPassed, b.doc.Verdict)
	for _, r := range b.rows() {
		assert.NotEqual(t, rubric.Passed, r.Verdict, "%s passed for a submission that does nothing: %s", r.ID, r.Reason)
		assert.NotEmpty(t, strings.TrimSpace(r.Reason), "%s has no reason", r.ID)
	}
	for _, id := range []string{"network", "credential", "injection", "isolation"} {
		assert.Equal(t, rubric.NotMeasured, b.row(t, id).Verdict, "security criterion %s: nothing was violated, nothing measured (%s)", id, b.row(t, id).Reason)
	}
	assert.Contains(t, b.row(t, "D1").Reason, "no install step was attempted")
	assert.Contains(t, b.row(t, "M1").Reason, "created no sandbox")
	requireNoLeaks(t, sandboxIDsIn(t, dir))
	return b
}

// TestParseInterspersed: flags stand anywhere among the arguments; a bare
// "--" ends the flags.
func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	out := fs.String("out", "", "")
	par := fs.Int("parallel", 1, "")
	rest, err := parseInterspersed(fs, []string{"a", "--out", "X", "b", "--parallel=3", "c", "--", "--d"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "--d"}, rest)
	assert.Equal(t, "X", *out)
	assert.Equal(t, 3, *par)
	_, err = parseInterspersed(fs, []string{"a", "--nope"})
	assert.ErrorContains(t, err, "flag provided but not defined: -nope")
}

// A --target that checks no API key (a real server with no api_key, or
// serve-mock --no-auth) is refused before anything is graded: there no call
// could be attributed to the submission that made it. A server that checks
// keys answers a keyless call 401 and passes.
func TestGradeRefusesAnAuthOffTarget(t *testing.T) {
	open := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"items":[],"pagination":{"page":1,"pageSize":1,"totalItems":0,"totalPages":0,"hasNextPage":false}}`)
	}))
	defer open.Close()
	out := filepath.Join(t.TempDir(), "class")
	var stdout, stderr bytes.Buffer
	code := gradeMain([]string{"--out", out, "--wheels", filepath.Join(repoRoot(t), ".cache", "wheels"),
		"--target", open.URL, "--api-key", "some-key-1234", "testdata/empty"}, &stdout, &stderr)
	assert.Equal(t, rubric.ExitHarnessError, code, "stderr: %s", stderr.String())
	assert.Contains(t, stderr.String(), "checks no API key")
	assert.NotContains(t, stderr.String(), "some-key-1234")
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err), "a refused target leaves no class directory behind")

	checking := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("OPEN-SANDBOX-API-KEY") != "some-key-1234" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, `{"items":[]}`)
	}))
	defer checking.Close()
	assert.NoError(t, refuseAuthOffTarget(context.Background(), &runConfig{target: checking.URL, apiKey: "some-key-1234"}))
	assert.NoError(t, refuseAuthOffTarget(context.Background(), &runConfig{target: "mock"}))
}
