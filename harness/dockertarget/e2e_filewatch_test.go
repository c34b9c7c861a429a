//go:build linux

package dockertarget

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// TestDockerWatchSeesAFileGoneAtOnce stands the docker target up
// (OSB_DOCKER_E2E=1) and watches a real sandbox's /workspace from the host
// before its first command: once the workspace's own watch is armed, a file
// a command creates and removes at once is seen, and so is one it leaves;
// the watch ends when the sandbox is removed.
func TestDockerWatchSeesAFileGoneAtOnce(t *testing.T) {
	tg := startTarget(t, "OSB_DOCKER_E2E")
	client, err := osb.New(strings.TrimPrefix(tg.URL, "http://"), tg.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{"image": map[string]any{"uri": SandboxImageURI}, "entrypoint": []string{"tail", "-f", "/dev/null"},
		"resourceLimits": map[string]string{"cpu": "1", "memory": "1Gi"}, "timeout": 600,
		"networkPolicy": map[string]any{"defaultAction": "deny", "egress": []any{}}})
	id, state, err := create(tg, body)
	if err != nil || state != "Running" {
		t.Fatalf("create: %v %q", err, state)
	}
	removed := false
	defer func() {
		if !removed {
			removeSandbox(tg, id)
		}
	}()
	w, err := tg.WatchCreates(context.Background(), id, "/workspace")
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	ep, err := client.GetEndpoint(context.Background(), id, 44772, false)
	if err != nil || !ep.Decoded {
		t.Fatalf("endpoint: %v", err)
	}
	ex, err := client.Execd(ep.Value)
	if err != nil {
		t.Fatal(err)
	}
	if ok, r := ex.WaitReady(context.Background(), 200*time.Millisecond, 60*time.Second); !ok {
		t.Fatalf("execd not ready: %+v", r)
	}
	run := func(cmd string) {
		t.Helper()
		res, err := ex.Run(context.Background(), osb.CommandRequest{Command: cmd, TimeoutMs: 30_000})
		if err != nil || res.Value.ExitCode == nil || *res.Value.ExitCode != 0 {
			t.Fatalf("%q: %v %+v", cmd, err, res)
		}
	}
	// The first write into the workspace puts it in the upper directory;
	// once its own watch is armed, a file that lives for one command's
	// microseconds is seen by inotify itself, not by the arming scan.
	run("mkdir -p /workspace && echo x > /workspace/report.md")
	for deadline := time.Now().Add(5 * time.Second); w.DirArmed().IsZero() && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if w.DirArmed().IsZero() {
		t.Fatal("the workspace's own watch was never armed")
	}
	run("touch /workspace/pwned && rm /workspace/pwned")
	deadline := time.Now().Add(5 * time.Second)
	var got []FileCreated
	for time.Now().Before(deadline) {
		if got, err = w.Created(); err != nil {
			t.Fatal(err)
		}
		if len(got) >= 2 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	names := map[string]bool{}
	for _, c := range got {
		names[c.Path] = true
	}
	if !names["/workspace/pwned"] || !names["/workspace/report.md"] {
		t.Fatalf("the watch saw %+v; want /workspace/pwned (gone at once) and /workspace/report.md", got)
	}
	removeSandbox(tg, id)
	removed = true
	select {
	case <-w.done:
	case <-time.After(60 * time.Second):
		t.Error("the watch did not end with its sandbox")
	}
}
