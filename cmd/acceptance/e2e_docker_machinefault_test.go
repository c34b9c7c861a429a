//go:build e2e

package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/osb-capstone/acceptance/harness/dockertarget"
)

// TestDockerKillIsAHarnessError: a sandbox the machine stopped is the
// harness's fault, never the student's, on the docker target too: while the
// reference runs on fixture "sales", the engine kills its sandbox's
// container (`docker kill`: SIGKILL, the container left in the engine, as
// an engine restart, the host's OOM killer or an operator would leave it).
// The grade must be a harness error (exit 2) whose reason names what the
// engine said (killed by SIGKILL, exit code 137), never the reference's
// failure.
func TestDockerKillIsAHarnessError(t *testing.T) {
	pool := machineFaultEngine(t)
	machineFault(t, pool, "docker-kill", func(ctx context.Context, c dc.APIContainers) error {
		return pool.Client.KillContainer(dc.KillContainerOptions{ID: c.ID, Signal: dc.SIGKILL, Context: ctx})
	}, "SIGKILL", "137")
}

// TestDockerOOMKillIsAHarnessError: the same for the kernel's OOM killer in
// the sandbox's own memory cgroup, for real: the container's memory limit
// is lowered to 96 MiB (docker update), its first process is made the OOM
// killer's first choice (oom_score_adj 1000), and a process of 256 MiB is
// started in it (docker exec). The container stops and the engine's events
// say the OOM killer struck (the container is removed by then, so its
// State.OOMKilled is gone with it; its oom and die events remain).
func TestDockerOOMKillIsAHarnessError(t *testing.T) {
	pool := machineFaultEngine(t)
	machineFault(t, pool, "docker-oom", func(ctx context.Context, c dc.APIContainers) error {
		ct, err := pool.Client.InspectContainerWithContext(c.ID, ctx)
		if err != nil {
			return err
		}
		if err := pool.Client.UpdateContainer(c.ID, dc.UpdateContainerOptions{Memory: 96 << 20, MemorySwap: 96 << 20, Context: ctx}); err != nil {
			return fmt.Errorf("docker update --memory: %w", err)
		}
		if err := os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", ct.State.Pid), []byte("1000"), 0); err != nil {
			return fmt.Errorf("oom_score_adj of the container's first process: %w", err)
		}
		exec, err := pool.Client.CreateExec(dc.CreateExecOptions{Container: c.ID, Context: ctx,
			Cmd: []string{"python3", "-c", "import time; x = bytearray(256 << 20); time.sleep(30)"}})
		if err != nil {
			return fmt.Errorf("docker exec: %w", err)
		}
		return pool.Client.StartExec(exec.ID, dc.StartExecOptions{Detach: true, Context: ctx})
	}, "oom (the kernel's OOM killer)", "exit code 137")
}

// machineFaultEngine is the project's engine, or the test is skipped.
func machineFaultEngine(t *testing.T) *dockertest.Pool {
	if os.Getenv("OSB_DOCKER_E2E") != "1" {
		t.Skip("not measured: set OSB_DOCKER_E2E=1 (grades against the docker target on the project's engine; make docker-engine)")
	}
	pool, err := dockertarget.Connect(context.Background(), dockertarget.Endpoint())
	if err != nil {
		t.Skipf("not measured: the project's Docker engine is not usable (%v); make docker-engine starts it", err)
	}
	return pool
}

// machineFault grades the reference on fixture "sales" while fault strikes
// the first sandbox container of the grade's own run (labelled with its
// sandbox id; its egress sidecar is not) once it has run for 2 s. The
// engine is shared: another run's sandbox is never struck. A docker-target
// run holds the engine's run lock from before its control plane is up until
// it ends, so only containers created after this grade's target said it
// was up are its own. The grade must be a harness error (exit 2) whose
// reason names the sandbox and carries what the engine said (each of said),
// never the reference's failure.
func machineFault(t *testing.T, pool *dockertest.Pool, name string, fault func(context.Context, dc.APIContainers) error, said ...string) {
	e := requireSubjectEnv(t)
	gradingEnv(t)
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))

	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var hitID, hitSandbox string
	var faultErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		var upAt time.Time // when this grade's target said it was up
		seen := map[string]time.Time{}
		for ctx.Err() == nil {
			if upAt.IsZero() && strings.Contains(stdout.String()+stderr.String(), " up (images ") {
				upAt = time.Now().Add(-time.Second) // the engine's clock is this machine's
			}
			var list []dc.APIContainers
			if !upAt.IsZero() {
				list, _ = pool.Client.ListContainers(dc.ListContainersOptions{Context: ctx,
					Filters: map[string][]string{"label": {"opensandbox.io/id"}, "status": {"running"}}})
			}
			for _, c := range list {
				if time.Unix(c.Created, 0).Before(upAt) {
					continue // another run's, or left from before
				}
				if _, ok := seen[c.ID]; !ok {
					seen[c.ID] = time.Now()
				}
				if time.Since(seen[c.ID]) >= 2*time.Second {
					err := fault(ctx, c)
					mu.Lock()
					hitID, hitSandbox, faultErr = c.ID, c.Labels["opensandbox.io/id"], err
					mu.Unlock()
					return
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	out := keptDir(t, name)
	args := []string{"grade", "--target", "docker", "--out", out, "--wheels", e.wheels, "--baselines", t.TempDir(),
		"--subject-timeout", "3m", "--parallel", "1", "--seed", "1",
		"--tags", "@milestone:M2 && @criterion:function && ~@large",
		filepath.Join(e.root, "fixtures", "submissions", "reference")}
	start := time.Now()
	code := dispatch(args, &stdout, &stderr)
	cancel()
	<-done
	t.Logf("acceptance grade --target docker: exit %d in %s\n%s%s", code, time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, hitID, "the test struck no sandbox container of its grade (none ran for 2 s)")
	require.NoError(t, faultErr, "the fault on container %s", hitID)
	t.Logf("struck container %s of sandbox %s", hitID[:12], hitSandbox)

	// The reason is somewhere the grader reads it: the console or the bundle.
	text := stdout.String() + stderr.String()
	_ = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".json")) {
			if b, err := os.ReadFile(p); err == nil {
				text += string(b)
			}
		}
		return nil
	})
	assert.Equal(t, 2, code, "a sandbox the machine stopped is a harness error (exit 2), never the reference's failure")
	i := strings.Index(text, "sandbox "+hitSandbox+" stopped")
	require.GreaterOrEqual(t, i, 0, "the reason names the sandbox")
	reason := text[i:min(len(text), i+1500)]
	if j := strings.IndexAny(reason, "\"\n"); j > 0 {
		reason = reason[:j]
	}
	t.Logf("the reason: %s", reason)
	assert.Contains(t, reason, "the engine says: ", "the reason carries what the engine said")
	for _, w := range said {
		assert.Contains(t, reason, w, "what the engine said")
	}
}
