//go:build e2e

package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/osb-capstone/acceptance/harness/dockertarget"
)

// TestDockerKillIsAHarnessError: a sandbox the machine stopped is the
// harness's fault, never the student's, on the docker target too: while the reference runs on fixture "sales", the engine kills its
// sandbox's container (`docker kill`: SIGKILL, the container left in the
// engine, as an engine restart, the host's OOM killer or an operator would
// leave it). The grade must be a harness error (exit 2) whose reason names
// what the engine said (killed by SIGKILL, exit code 137), never the
// reference's failure.
func TestDockerKillIsAHarnessError(t *testing.T) {
	if os.Getenv("OSB_DOCKER_E2E") != "1" {
		t.Skip("not measured: set OSB_DOCKER_E2E=1 (grades against the docker target on the project's engine; make docker-engine)")
	}
	pool, err := dockertarget.Connect(context.Background(), dockertarget.Endpoint())
	if err != nil {
		t.Skipf("not measured: the project's Docker engine is not usable (%v); make docker-engine starts it", err)
	}
	e := requireSubjectEnv(t)
	gradingEnv(t)
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))

	// The killer: the first sandbox container (labelled with its sandbox
	// id; its egress sidecar is not) running for 2 s is killed, once.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var killedID, killedSandbox string
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]time.Time{}
		for ctx.Err() == nil {
			list, err := pool.Client.ListContainers(dc.ListContainersOptions{Context: ctx,
				Filters: map[string][]string{"label": {"opensandbox.io/id"}, "status": {"running"}}})
			if err == nil {
				for _, c := range list {
					if _, ok := seen[c.ID]; !ok {
						seen[c.ID] = time.Now()
					}
					if time.Since(seen[c.ID]) >= 2*time.Second {
						if pool.Client.KillContainer(dc.KillContainerOptions{ID: c.ID, Signal: dc.SIGKILL, Context: ctx}) == nil {
							mu.Lock()
							killedID, killedSandbox = c.ID, c.Labels["opensandbox.io/id"]
							mu.Unlock()
							return
						}
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()

	out := keptDir(t, "docker-kill")
	args := []string{"grade", "--target", "docker", "--out", out, "--wheels", e.wheels, "--baselines", t.TempDir(),
		"--subject-timeout", "3m", "--parallel", "1", "--seed", "1",
		"--tags", "@milestone:M2 && @criterion:function && ~@large",
		filepath.Join(e.root, "fixtures", "submissions", "reference")}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := dispatch(args, &stdout, &stderr)
	cancel()
	<-done
	t.Logf("acceptance grade --target docker: exit %d in %s\n%s%s", code, time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, killedID, "the test killed no sandbox container (none ran for 2 s)")
	t.Logf("killed container %s of sandbox %s", killedID[:12], killedSandbox)

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
	assert.Equal(t, 2, code, "a sandbox the machine killed is a harness error (exit 2), never the reference's failure")
	i := strings.Index(text, "sandbox "+killedSandbox+" stopped")
	require.GreaterOrEqual(t, i, 0, "the reason names the sandbox")
	reason := text[i:min(len(text), i+1500)]
	if j := strings.IndexAny(reason, "\"\n"); j > 0 {
		reason = reason[:j]
	}
	t.Logf("the reason: %s", reason)
	assert.Contains(t, reason, "the engine says: ", "the reason carries what the engine said")
	assert.Contains(t, reason, "SIGKILL", "the engine's signal")
	assert.Contains(t, reason, "137", "the engine's exit code")
}
