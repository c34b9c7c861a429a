package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Integration tests of `acceptance run`: each starts the bundled server with
// real sandboxes (or drives one as a URL target) and grades the reference
// subject, then checks every output of the report bundle.

// TestRunUsageErrors: command-line mistakes exit 2 with a clear message and
// leave no report bundle behind. None of them starts a sandbox.
func TestRunUsageErrors(t *testing.T) {
	t.Setenv("OPEN_SANDBOX_API_KEY", "")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"--no-such-flag"}, "flag provided but not defined"},
		{"stray argument", []string{"extra"}, "unexpected arguments"},
		{"bad concurrency", []string{"--concurrency", "0"}, "--concurrency must be at least 1"},
		{"bad seed", []string{"--seed", "abc"}, "invalid value"},
		{"target not a URL", []string{"--target", "localhost:8080", "--api-key", "k"}, `--target must be "mock" or an http(s) URL`},
		{"target bad scheme", []string{"--target", "ftp://127.0.0.1:21", "--api-key", "k"}, `--target must be "mock" or an http(s) URL`},
		{"target without host", []string{"--target", "http://", "--api-key", "k"}, `--target must be "mock" or an http(s) URL`},
		{"URL target without key", []string{"--target", "http://127.0.0.1:1"}, "needs --api-key"},
		{"docker target, not a version", []string{"--target", "docker", "--server-version", "1.1; rm -rf /"}, `--server-version "1.1; rm -rf /" is not a version`},
		{"docker target, a version not in the table", []string{"--target", "docker", "--server-version", "9.9.9"}, "opensandbox-server==9.9.9 is not in the version table (harness/dockertarget/versions.go"},
		{"docker target, a version naming no images", []string{"--target", "docker", "--server-version", "0.1.0", "--execd-image", "x/execd:1"}, "opensandbox-server==0.1.0 names no images"},
		{"image override without docker", []string{"--execd-image", "x/execd:1"}, "are for --target docker"},
		{"subject with a NUL byte", []string{"--subject", "run\x00{out}"}, "--subject"},
		{"empty subject", []string{"--subject", ""}, "--subject"},
		// a timeout of zero or less would end every run at once
		{"zero subject timeout", []string{"--subject-timeout", "0"}, "--subject-timeout must be positive, got 0s"},
		{"negative subject timeout", []string{"--subject-timeout", "-5s"}, "--subject-timeout must be positive, got -5s"},
		{"missing wheels", []string{"--wheels", "/nonexistent/wheels"}, "--wheels /nonexistent/wheels"},
		{"missing subject program", []string{"--subject", "pyhton3 agent.py --out {out}"}, `the program "pyhton3" is not found on PATH`},
		{"missing subject script", []string{"--subject", "./no-such-agent.sh {out}"}, `the program "./no-such-agent.sh" does not exist`},
		{"malformed tags", []string{"--tags", "@a &&"}, `--tags "@a &&" is malformed`},
		// flags that cannot apply are errors, never silently ignored
		{"api key with the bundled server", []string{"--api-key", "k"}, "--api-key is for a URL target only; --target mock makes its own key"},
		{"api key with docker", []string{"--target", "docker", "--api-key", "k"}, "--api-key is for a URL target only; --target docker"},
		{"server version without docker", []string{"--server-version", "1.1.1"}, "--server-version applies to --target docker only, not --target mock"},
		{"server version with a URL", []string{"--target", "http://127.0.0.1:1", "--api-key", "k", "--server-version", "1.1.1"}, "--server-version applies to --target docker only"},
	}
	wheels := filepath.Join(repoRoot(t), ".cache", "wheels")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "bundle")
			var stdout, stderr bytes.Buffer
			code := runMain(append([]string{"--out", out, "--wheels", wheels}, tc.args...), &stdout, &stderr)
			assert.Equal(t, rubric.ExitHarnessError, code, "stderr: %s", stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
			assert.NotContains(t, stderr.String(), "panic")
			_, err := os.Stat(out)
			assert.True(t, os.IsNotExist(err), "a usage error leaves no bundle behind (stat: %v)", err)
		})
	}
	// A URL target is checked before anything is graded: an unreachable
	// server or a rejected key is the command line's mistake, not the
	// subject's failure.
	rejecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"code":"INVALID_API_KEY","message":"Authentication credentials were not provided or are invalid."}`)
	}))
	defer rejecting.Close()
	for _, tc := range []struct {
		name, target, want string
	}{
		{"unreachable target", "http://127.0.0.1:1", "is not reachable"},
		{"key rejected", rejecting.URL, "rejects the API key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "bundle")
			var stdout, stderr bytes.Buffer
			code := runMain([]string{"--out", out, "--wheels", wheels, "--target", tc.target, "--api-key", "wrong-key-123"}, &stdout, &stderr)
			assert.Equal(t, rubric.ExitHarnessError, code, "stderr: %s", stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
			assert.NotContains(t, stderr.String(), "wrong-key-123", "the key is never printed")
			_, err := os.Stat(out)
			assert.True(t, os.IsNotExist(err), "a bad target leaves no bundle behind (stat: %v)", err)
		})
	}
	t.Run("help", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 0, runMain([]string{"-h"}, &stdout, &stderr))
		assert.Contains(t, stderr.String(), "-target")
	})
	t.Run("unknown command", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, dispatch([]string{"rnu"}, &stdout, &stderr))
		assert.Contains(t, stderr.String(), `unknown command "rnu"`)
	})
}

func TestURLTargetDomain(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8080":     "127.0.0.1:8080",
		"http://127.0.0.1:8080/":    "127.0.0.1:8080",
		"http://10.0.0.5:80/osb/v1": "10.0.0.5:80/osb/v1",
		"https://osb.internal:443":  "https://osb.internal:443",
	} {
		assert.Equal(t, want, urlTargetDomain(in), in)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// mdEscape is how report.md escapes a table cell.
func mdEscape(s string) string { return render.Cell(s) }

// TestBaselinesMustExist: a --baselines directory that does not exist (or is
// a file) is a usage error for run and grade (exit 2, one line, no bundle),
// not a run that silently detects no drift; recording baselines
// (UPDATE_BASELINES=1) may name a directory it will create, and an empty
// value turns drift detection off.
func TestBaselinesMustExist(t *testing.T) {
	t.Setenv("OPEN_SANDBOX_API_KEY", "")
	t.Setenv("UPDATE_BASELINES", "")
	wheels := filepath.Join(repoRoot(t), ".cache", "wheels")
	missing := filepath.Join(t.TempDir(), "no-such-baselines")
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	for _, cmd := range []struct {
		name string
		main func([]string, io.Writer, io.Writer) int
		args []string
	}{
		{"run", runMain, nil},
		{"grade", gradeMain, []string{"testdata/empty"}},
	} {
		for _, tc := range []struct{ dir, want string }{
			{missing, "--baselines " + missing + ": stat " + missing + ": no such file or directory"},
			{file, "--baselines " + file + " is not a directory"},
		} {
			t.Run(cmd.name+"/"+filepath.Base(tc.dir), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "bundle")
				var stdout, stderr bytes.Buffer
				args := append([]string{"--out", out, "--wheels", wheels, "--baselines", tc.dir}, cmd.args...)
				code := cmd.main(args, &stdout, &stderr)
				assert.Equal(t, rubric.ExitHarnessError, code, "stderr: %s", stderr.String())
				assert.Contains(t, stderr.String(), tc.want)
				assert.Equal(t, 1, strings.Count(stderr.String(), "\n"), "one line: %q", stderr.String())
				_, err := os.Stat(out)
				assert.True(t, os.IsNotExist(err), "a usage error leaves no bundle behind (stat: %v)", err)
			})
		}
	}
	// The flag parser alone: recording may create the directory; "" is off;
	// the default (not given) is left to drift reporting.
	for _, tc := range []struct {
		name   string
		update string
		args   []string
		ok     bool
	}{
		{"recording a new directory", "1", []string{"--baselines", missing}, true},
		{"grading with a missing directory", "", []string{"--baselines", missing}, false},
		{"drift detection off", "", []string{"--baselines", ""}, true},
		{"an existing directory", "", []string{"--baselines", t.TempDir()}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("UPDATE_BASELINES", tc.update)
			_, err := parseRunFlags(append([]string{"--wheels", wheels}, tc.args...), io.Discard)
			if tc.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
			_, statErr := os.Stat(missing)
			assert.True(t, os.IsNotExist(statErr), "parsing flags creates nothing")
		})
	}
}

// TestDefaultWheelsOutsideTheCheckout: `grade` run from another directory
// must not fail on the relative default --wheels: it uses the wheels of the
// checkout the binary was built in, or says clearly what to pass.
func TestDefaultWheelsOutsideTheCheckout(t *testing.T) {
	root := repoRoot(t)
	assert.Equal(t, root, checkoutOf(filepath.Join(root, "bin")), "bin/acceptance belongs to the checkout")
	assert.Equal(t, root, checkoutOf(root))
	assert.Empty(t, checkoutOf(t.TempDir()))

	// The test binary lives outside any checkout: from a foreign directory
	// the default is a clear usage error naming what to do.
	t.Chdir(t.TempDir())
	_, err := parseRunFlags(nil, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--wheels not given, and there is no .cache/wheels in the working directory")
	assert.Contains(t, err.Error(), "pass --wheels DIR")
	var stderr bytes.Buffer
	assert.Equal(t, rubric.ExitHarnessError, gradeMain([]string{filepath.Join(root, "fixtures", "submissions", "reference")}, io.Discard, &stderr))
	assert.Contains(t, stderr.String(), "--wheels not given")

	// With .cache/wheels in the working directory, that one (absolute).
	require.NoError(t, os.MkdirAll(filepath.Join(".cache", "wheels"), 0o755))
	c, err := parseRunFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.True(t, filepath.IsAbs(c.wheels), c.wheels)
	assert.Equal(t, ".cache/wheels", filepath.Join(filepath.Base(filepath.Dir(c.wheels)), filepath.Base(c.wheels)))
}
