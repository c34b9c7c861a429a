package dockertarget

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	dc "github.com/ory/dockertest/v3/docker"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// The engine's address of a container names its sandbox: a sandbox's own
// container, or the egress sidecar whose network namespace a sandbox with a
// policy shares; any other container, or an address nobody holds, names
// nobody.
func TestSandboxHoldingAnAddress(t *testing.T) {
	nets := func(ip string) dc.NetworkList {
		return dc.NetworkList{Networks: map[string]dc.ContainerNetwork{"bridge": {IPAddress: ip}}}
	}
	list := []dc.APIContainers{
		{Labels: map[string]string{labelSidecarOf: "sb-policy"}, Networks: nets("10.213.47.2")},
		{Labels: map[string]string{labelSandboxID: "sb-policy"}}, // shares its sidecar's namespace: no address of its own
		{Labels: map[string]string{labelSandboxID: "sb-open"}, Networks: nets("10.213.47.3")},
		{Labels: map[string]string{"other": "x"}, Networks: nets("10.213.47.4")},
	}
	for ip, want := range map[string]string{"10.213.47.2": "sb-policy", "10.213.47.3": "sb-open", "10.213.47.4": "", "10.213.47.9": ""} {
		if got := sandboxHolding(list, net.ParseIP(ip)); got != want {
			t.Errorf("%s: %q, want %q", ip, got, want)
		}
	}
}

// The front names the sandbox the engine says sent a request, and never
// passes on the name a request claims for itself.
func TestFrontNamesTheSendingSandbox(t *testing.T) {
	var got []string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get(wire.EgressSandboxHeader))
	})
	byAddr := func(ip net.IP) string {
		if ip.Equal(net.ParseIP("10.213.47.2")) {
			return "sb-1"
		}
		return ""
	}
	for _, tc := range []struct {
		remote string
		attr   func(net.IP) string
		want   string
	}{
		{"10.213.47.2:40000", byAddr, "sb-1"},
		{"10.213.47.5:40000", byAddr, ""}, // nobody's: not attributed, and the claim dropped
		{"10.213.47.2:40000", nil, ""},    // no attribution: the claim dropped all the same
	} {
		got = nil
		r := httptest.NewRequest("POST", "http://exfil.capstone.test/collect", nil)
		r.RemoteAddr = tc.remote
		r.Header.Set(wire.EgressSandboxHeader, "sb-forged")
		attributed(tc.attr, next).ServeHTTP(httptest.NewRecorder(), r)
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: the stub saw %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// Through the running front: the exfiltration sink is served by name like
// the data API, and the stub sees the sandbox the bridge's Attribute named.
func TestBridgeFrontServesTheSinkAttributed(t *testing.T) {
	var saw, host string
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		saw, host = r.Header.Get(wire.EgressSandboxHeader), r.Host
		_, _ = io.WriteString(w, `{"received":true}`)
	}))
	defer stub.Close()
	addr := net.ParseIP("127.213.47.2") // a loopback address of its own (see TestBridgeServicesServeAndCollide)
	b := Bridge{Iface: "lo-test", Addr: addr, ipt: &fakeIPTables{},
		Attribute: func(ip net.IP) string {
			if ip.IsLoopback() {
				return "sb-loop"
			}
			return ""
		}}
	s, err := StartBridgeServices(b, map[string]string{"exfil.capstone.test": stub.URL})
	if err != nil {
		t.Skipf("not measured: cannot bind ports 53/80 on %s here: %v", addr, err)
	}
	defer s.Close()
	req, _ := http.NewRequest("POST", "http://"+addr.String()+"/collect", nil)
	req.Host = "exfil.capstone.test"
	req.Header.Set(wire.EgressSandboxHeader, "sb-forged")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || saw != "sb-loop" || host != "exfil.capstone.test" {
		t.Errorf("front: %d, the sink saw sandbox %q for Host %q; want 200, sb-loop, exfil.capstone.test", resp.StatusCode, saw, host)
	}
}
