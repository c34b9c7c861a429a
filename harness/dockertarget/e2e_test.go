package dockertarget

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// TestDockerTargetCommands stands the docker target up (OSB_DOCKER_E2E=1;
// needs the engine, builds or reuses the images from bin/acceptance) and runs
// commands through the real control plane's endpoint and the execd stand-in,
// with and without a network policy: small and large outputs, several in a
// row on one client (keep-alive), as the suite does.
func TestDockerTargetCommands(t *testing.T) {
	tg := startTarget(t, "OSB_DOCKER_E2E")
	client, err := osb.New(strings.TrimPrefix(tg.URL, "http://"), tg.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, policy := range []bool{false, true} {
		req := map[string]any{"image": map[string]any{"uri": SandboxImageURI}, "entrypoint": []string{"tail", "-f", "/dev/null"},
			"resourceLimits": map[string]string{"cpu": "1", "memory": "1Gi"}, "timeout": 600}
		if policy {
			req["networkPolicy"] = map[string]any{"defaultAction": "deny", "egress": []any{map[string]any{"action": "allow", "target": "pypi.org"}}}
		}
		body, _ := json.Marshal(req)
		id, state, err := create(tg, body)
		if err != nil || state != "Running" {
			t.Fatalf("create (policy %v): %v %q", policy, err, state)
		}
		ep, err := client.GetEndpoint(context.Background(), id, 44772, false)
		if err != nil || !ep.Decoded {
			t.Fatalf("endpoint: %v", err)
		}
		ex, err := client.Execd(ep.Value)
		if err != nil {
			t.Fatal(err)
		}
		if ok, r := ex.WaitReady(context.Background(), 200*time.Millisecond, 30*time.Second); !ok {
			t.Fatalf("execd not ready (policy %v): %+v", policy, r)
		}
		for i := 0; i < 3; i++ {
			for _, cmd := range []string{"echo 1", "python3 -c 'print(1+1)'", "head -c 100000 /dev/zero | base64 | head -c 50000", "seq 1 3000 | tail -1"} {
				res, err := ex.Run(context.Background(), osb.CommandRequest{Command: cmd})
				if err != nil {
					t.Fatalf("policy %v, round %d, %q: %v", policy, i, cmd, err)
				}
				if res.Value.ExitCode == nil || *res.Value.ExitCode != 0 {
					t.Fatalf("policy %v, %q: exit %v", policy, cmd, res.Value.ExitCode)
				}
			}
		}
		if policy {
			res, err := ex.Run(context.Background(), osb.CommandRequest{Command: `python3 -c "import socket; socket.getaddrinfo('exfil.example.com', 443)"`})
			if err != nil || res.Value.ExitCode == nil || *res.Value.ExitCode == 0 || !strings.Contains(res.Value.StderrText(), "Name or service not known") {
				t.Errorf("a denied name must fail with NXDOMAIN: %v %+v", err, res)
			}
		}
		removeSandbox(tg, id)
	}
}
