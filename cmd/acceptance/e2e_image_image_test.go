//go:build e2e

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/dockertarget"
	"github.com/osb-capstone/acceptance/harness/report"
)

// imageE2E is what the image theme's tests share: the repository and the
// engine the grader image is built and run on.
type imageE2E struct {
	root string // the repository
	host string // DOCKER_HOST of the project's engine
}

// requireImageEngine skips (not measured) unless OSB_DOCKER_E2E=1 and the
// project's engine answers: the image theme builds the grader image there
// (`make image`) and grades in its containers.
func requireImageEngine(t *testing.T) imageE2E {
	t.Helper()
	if testing.Short() {
		t.Skip("not measured: the grader image tests build an image and grade in containers; skipped in -short mode")
	}
	if os.Getenv("OSB_DOCKER_E2E") != "1" {
		t.Skip("not measured: set OSB_DOCKER_E2E=1 (builds the grader image with make image on the project's engine and grades in its containers; make docker-engine)")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skipf("not measured: no docker CLI (%v); make docker-engine installs Debian's docker.io", err)
	}
	host := dockertarget.Endpoint()
	if _, err := dockertarget.Connect(context.Background(), host); err != nil {
		t.Skipf("not measured: the project's Docker engine is not usable (%v); make docker-engine starts it", err)
	}
	if os.Geteuid() != 0 {
		t.Skipf("not measured: make image bootstraps Debian as root (euid %d)", os.Geteuid())
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	if m, _ := filepath.Glob(filepath.Join(root, ".cache", "wheels", "*.whl")); len(m) == 0 {
		t.Skipf("not measured: no stub index wheels in %s/.cache/wheels; run make deps", root)
	}
	return imageE2E{root: root, host: host}
}

// docker runs the docker CLI on the project's engine; it returns stdout and
// fails the test on a non-zero exit unless allowFail.
func (e imageE2E) docker(t *testing.T, timeout time.Duration, allowFail bool, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+e.host)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		code = -1
		if x, ok := err.(*exec.ExitError); ok {
			code = x.ExitCode()
		}
		if ctx.Err() != nil {
			t.Fatalf("docker %s: no end within %s\n%s%s", strings.Join(args, " "), timeout, tail(out.String(), 4000), tail(errb.String(), 4000))
		}
		if !allowFail {
			t.Fatalf("docker %s: %v\n%s%s", strings.Join(args, " "), err, tail(out.String(), 4000), tail(errb.String(), 4000))
		}
	}
	return out.String() + errb.String(), code
}

// script runs one of the repository's scripts (.ci/…) with the engine's
// DOCKER_HOST and returns its stdout's last line.
func (e imageE2E) script(t *testing.T, timeout time.Duration, env []string, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(e.root, ".ci", name))
	cmd.Dir = e.root
	cmd.Env = append(append(os.Environ(), "DOCKER_HOST="+e.host), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s: %s\n%s", name, time.Since(start).Round(time.Second), tail(errb.String(), 3000))
	require.NoError(t, err, "%s", name)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	return lines[len(lines)-1]
}

// graderImage builds (or, with the engine's cache, rebuilds in seconds) the
// grader image of this checkout under a tag of the tests' own.
func (e imageE2E) graderImage(t *testing.T) string {
	t.Helper()
	const ref = "osb-acceptance/grader:e2e"
	e.script(t, 40*time.Minute, []string{"IMAGE=" + ref}, "image.sh")
	return ref
}

// baseImage is the grader's base image (Debian packages only), which
// graderImage has built: osb-acceptance/grader-base:<hash of the files
// .ci/image.sh keys it by: the rootfs script and what it sources>.
func (e imageE2E) baseImage(t *testing.T) string {
	t.Helper()
	h := sha256.New()
	for _, f := range graderBaseFiles(t, e.root) {
		b, err := os.ReadFile(filepath.Join(e.root, f))
		require.NoError(t, err)
		h.Write(b)
	}
	return "osb-acceptance/grader-base:" + hex.EncodeToString(h.Sum(nil))[:16]
}

// containerName is a name of this test's own, removed when it ends (only
// that container: the engine is shared).
func (e imageE2E) containerName(t *testing.T, what string) string {
	t.Helper()
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("osb-e2e-%s-%x", what, b)
	t.Cleanup(func() {
		cmd := exec.Command("docker", "rm", "-f", name)
		cmd.Env = append(os.Environ(), "DOCKER_HOST="+e.host)
		_ = cmd.Run()
	})
	return name
}

// privilegedEquivalent are the `docker run` options that give a container
// what --privileged gives the grader, for an engine that cannot start a
// privileged container: one whose own host lacks a capability --privileged
// asks for (this project's CI machine lacks CAP_SYS_RESOURCE, and runc then
// refuses every --privileged container with "unable to apply caps"). Every
// capability Docker knows but that one, no seccomp filter, no AppArmor
// profile, /proc and /sys writable, and the cgroup hierarchy writable.
var privilegedEquivalent = []string{"--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE",
	"--security-opt", "seccomp=unconfined", "--security-opt", "apparmor=unconfined", "--security-opt", "systempaths=unconfined",
	"-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw"}

// privileged is --privileged when the engine can start such a container,
// else privilegedEquivalent (logged, with the engine's refusal).
func (e imageE2E) privileged(t *testing.T, img string) []string {
	t.Helper()
	out, code := e.docker(t, 2*time.Minute, true, "run", "--rm", "--network", "none", "--privileged", img, "true")
	if code == 0 {
		return []string{"--privileged"}
	}
	if !strings.Contains(out, "unable to apply caps") {
		t.Fatalf("docker run --privileged: exit %d: %s", code, out)
	}
	t.Logf("this engine cannot start a --privileged container (its host lacks a capability --privileged asks for: %s); running with the equivalent options %v",
		strings.TrimSpace(firstLineOf(out)), privilegedEquivalent)
	return privilegedEquivalent
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// reportConfinement reads report.json's confinement block (level, holds, lacks).
func reportConfinement(t *testing.T, bundle string) (level string, raw map[string]any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(bundle, "report.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	c, _ := m["confinement"].(map[string]any)
	level, _ = c["level"].(string)
	return level, c
}

// TestImageGradesReferencePrivileged: the grader image (make image), run
// privileged on the project's engine as a reviewer on macOS or Windows would
// (`docker run --privileged … acceptance grade /submission`), grades the
// reference to 85 of 85 with full confinement, and a hostile round-1 member
// graded beside it (hostile-spy: it reads every process's environment and
// every bundle it can find) steals no classmate's key and no bundle. The
// container has no network (--network none): the grade needs only loopback.
// The command-time limits are raised (--submission-timeout 60m): this test is
// about the image, and the shared 2-core machine it runs on (load 30 and
// more) once took 15 minutes for what takes 71 s alone, and the default 15m
// budget then cut the reference's last runs short.
func TestImageGradesReferencePrivileged(t *testing.T) {
	e := requireImageEngine(t)
	img := e.graderImage(t)
	out := keptDir(t, "image-privileged")
	keys := t.TempDir()
	require.NoError(t, os.Chmod(keys, 0o700), "the journal key directory must be the grader's alone")
	name := e.containerName(t, "grader")
	start := time.Now()
	args := append([]string{"run", "--name", name, "--network", "none"}, e.privileged(t, img)...)
	args = append(args, "-e", "ACCEPTANCE_JOURNAL_KEYS=/keys",
		"-v", filepath.Join(e.root, "fixtures", "submissions")+":/subs:ro", "-v", out+":/out", "-v", keys+":/keys",
		img, "acceptance", "grade", "--seed", "1", "--parallel", "2", "--submission-timeout", "60m", "--subject-timeout", "20m", "--out", "/out/grade", "/subs/reference", "/subs/hostile-spy")
	logs, code := e.docker(t, 30*time.Minute, true, args...)
	t.Logf("docker run (privileged) %s acceptance grade reference hostile-spy: exit %d in %s\n%s", img, code, time.Since(start).Round(time.Second), tail(logs, 6000))
	require.NotEqual(t, 2, code, "the grade in the image must not be a usage or harness error")

	grade := filepath.Join(out, "grade")
	ref := calibrationBundle(t, grade, 0, "reference")
	require.NotNil(t, ref)
	assert.Equal(t, "passed", ref.Verdict, "the reference in the image: %s", ref.VerdictReason)
	assert.Equal(t, 85.0, ref.Score.Earned, "the reference's score in the image")
	assert.Equal(t, 85.0, ref.Score.Measured, "the weight measured in the image")
	level, conf := reportConfinement(t, filepath.Join(grade, "01-reference"))
	assert.Equal(t, "full", level, "a privileged container confines at the full level: report.json confinement %v", conf)

	spyDir := filepath.Join(grade, "02-hostile-spy")
	spy := calibrationBundle(t, grade, 1, "hostile-spy")
	require.NotNil(t, spy)
	assert.NotEqual(t, "harness_error", spy.Verdict, "hostile-spy: %s", spy.VerdictReason)
	recs := attackRecords(spyDir)
	require.NotEmpty(t, recs, "the spy's attack ran and left its record (attack-spy.json)")
	for _, r := range recs {
		assert.EqualValues(t, 0, r["sibling_keys"], "the spy read the classmate's API keys in the image")
		assert.Empty(t, r["sibling_files"], "the spy read the classmate's bundle in the image")
	}
	require.NoError(t, report.VerifyJournal(spyDir, keys), "the spy's journal verifies under its run's key")
}
