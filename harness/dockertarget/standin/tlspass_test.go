package standin

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// With the credential proxy, HTTPS to an allowed name (answered 127.0.0.1)
// is relayed unopened to port 443 of the address the upstream gave for the
// ClientHello's server name; a denied name, or one never resolved through
// the stand-in, is closed without dialling anything.
func TestStandInRelaysTLSByServerName(t *testing.T) {
	att := attach(t, `{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"},{"action":"allow","target":"files.pythonhosted.org"}]}`, true)
	var gotHost string
	up := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHost = r.Host
		_, _ = io.WriteString(w, "index "+r.URL.Path)
	}))
	defer up.Close()
	mem := &resolved{}
	mem.set("pypi.org", []net.IP{net.ParseIP("127.0.0.1")})
	var mu sync.Mutex
	var dialled []string
	p := tlsPassthrough{att: att, mem: mem, port: portOf(t, strings.Replace(up.URL, "https://", "http://", 1)),
		dial: func(network, addr string) (net.Conn, error) {
			mu.Lock()
			dialled = append(dialled, addr)
			mu.Unlock()
			return net.DialTimeout(network, addr, 5*time.Second)
		}}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go p.serve(l)

	get := func(name string) (string, error) {
		tr := &http.Transport{Proxy: nil, DialContext: nil,
			Dial:            func(string, string) (net.Conn, error) { return net.Dial("tcp4", l.Addr().String()) },
			TLSClientConfig: &tls.Config{ServerName: name, InsecureSkipVerify: true}} // the relay, not the certificate, is under test
		c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		resp, err := c.Get("https://" + name + "/simple/tabulate/")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), nil
	}
	if body, err := get("pypi.org"); err != nil || body != "index /simple/tabulate/" || gotHost != "pypi.org" {
		t.Errorf("allowed and resolved: %q %v (upstream saw Host %q)", body, err, gotHost)
	}
	for _, name := range []string{"exfil.capstone.test", "files.pythonhosted.org"} { // denied; allowed but never resolved here
		if body, err := get(name); err == nil {
			t.Errorf("%s relayed: %q", name, body)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(dialled) != 1 || !strings.HasPrefix(dialled[0], "127.0.0.1:") {
		t.Errorf("dialled %q, want the upstream address of pypi.org once", dialled)
	}
}
