//go:build linux

package runtime_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/egress"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// The agent starts the egress sidecar when a gateway socket is mounted: an
// allowed host resolves to the sidecar and reaches its loopback stub; a
// denied one does not resolve.
func TestEgressSidecarInSandbox(t *testing.T) {
	rt := newRuntime(t)
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "stub saw %s %s", r.Host, r.URL.Path)
	}))
	defer stub.Close()
	hub, err := egress.NewHub(egress.HubConfig{StateDir: t.TempDir(), Upstreams: map[string]string{"pypi.org": stub.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	id := "egress-" + fmt.Sprint(time.Now().UnixNano())
	att, err := hub.Attach(id, egress.Policy{DefaultAction: "deny", Egress: []egress.Rule{{Action: "allow", Target: "pypi.org"}}}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer att.Close()
	prof, _ := runtime.ProfileFor("python:3.12")
	env := att.SandboxEnv()
	sb, err := rt.Create(t.Context(), runtime.Spec{ID: id, Profile: prof, Entrypoint: []string{"sleep", "infinity"},
		Env: env, GatewaySocket: att.SocketPath(), ExtraFiles: att.SandboxFiles()})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Destroy()
	var r runResult
	for i := 0; i < 50; i++ {
		r = sh(t, sb, `python3 -c "import urllib.request; print(urllib.request.urlopen('http://pypi.org/simple/', timeout=5).read().decode())"`)
		if r.ok() {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := strings.Join(r.stdout(), ""); !strings.HasPrefix(got, "stub saw pypi.org /simple/") {
		t.Fatalf("allowed host through the sidecar: %s", r.Raw)
	}
	if r := sh(t, sb, "getent hosts denied.example.invalid || getent hosts files.pythonhosted.org"); r.ok() {
		t.Errorf("denied host resolved: %s", r.Raw)
	}
}
