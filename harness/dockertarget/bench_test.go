package dockertarget

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkDockerCreateRunning measures create → 202 Running (then delete) on
// the docker target, without and with a network policy (the egress sidecar).
// It stands the target up first; it needs the engine and the images
// (OSB_DOCKER_BENCH=1 make bench, or go test -run '^$' -bench DockerCreate).
func BenchmarkDockerCreateRunning(b *testing.B) {
	t := startTarget(b, "OSB_DOCKER_BENCH")
	policies := map[string]any{
		"no-policy": nil,
		"policy":    map[string]any{"defaultAction": "deny", "egress": []any{map[string]any{"action": "allow", "target": "pypi.org"}}},
	}
	for _, name := range []string{"no-policy", "policy"} {
		b.Run(name, func(b *testing.B) {
			var total time.Duration
			defer func() { b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/create") }()
			for i := 0; i < b.N; i++ {
				req := map[string]any{"image": map[string]any{"uri": SandboxImageURI}, "entrypoint": []string{"sleep", "infinity"},
					"resourceLimits": map[string]string{"cpu": "1", "memory": "512Mi"}, "timeout": 600}
				if p := policies[name]; p != nil {
					req["networkPolicy"] = p
				}
				body, _ := json.Marshal(req)
				start := time.Now()
				id, state, err := create(t, body)
				if err != nil {
					b.Fatal(err)
				}
				total += time.Since(start)
				if state != "Running" {
					b.Fatalf("create answered state %q", state)
				}
				removeSandbox(t, id)
			}
		})
	}
}

// startTarget stands the docker target up for a test or benchmark that was
// opted in with optIn=1 (it is skipped, as not measured, otherwise) and closes
// it when tb ends; a close error fails tb. The stand-in images are built from
// the acceptance binary (OSB_ACCEPTANCE_BIN, default bin/acceptance), not from
// the test binary; without one tb is skipped.
func startTarget(tb testing.TB, optIn string) *Target {
	tb.Helper()
	if os.Getenv(optIn) != "1" {
		tb.Skipf("not measured: set %s=1 (stands up the docker target)", optIn)
	}
	wd, _ := os.Getwd()
	repo := findRepo(wd)
	bin := envOr("OSB_ACCEPTANCE_BIN", filepath.Join(repo, "bin", "acceptance"))
	if _, err := os.Stat(bin); err != nil {
		tb.Skipf("not measured: no acceptance binary at %s (make build, or set OSB_ACCEPTANCE_BIN)", bin)
	}
	tg, err := Start(context.Background(), Config{RepoDir: repo, Log: os.Stderr, Binary: bin})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := tg.Close(); err != nil {
			tb.Error(err)
		}
	})
	return tg
}

// removeSandbox deletes sandbox id on t, best effort.
func removeSandbox(t *Target, id string) {
	hr, _ := http.NewRequest(http.MethodDelete, t.URL+"/v1/sandboxes/"+id, nil)
	hr.Header.Set("OPEN-SANDBOX-API-KEY", t.APIKey)
	if resp, err := http.DefaultClient.Do(hr); err == nil {
		resp.Body.Close()
	}
}

func create(t *Target, body []byte) (string, string, error) {
	hr, _ := http.NewRequest(http.MethodPost, t.URL+"/v1/sandboxes", bytes.NewReader(body))
	hr.Header.Set("OPEN-SANDBOX-API-KEY", t.APIKey)
	hr.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 3 * time.Minute}).Do(hr)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sb struct {
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
	}
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(b, &sb) != nil {
		return "", "", &httpErr{resp.StatusCode, string(b)}
	}
	return sb.ID, sb.Status.State, nil
}

type httpErr struct {
	status int
	body   string
}

func (e *httpErr) Error() string { return http.StatusText(e.status) + ": " + e.body }
