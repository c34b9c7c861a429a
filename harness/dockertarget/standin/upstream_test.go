package standin

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestTakeOverResolvConf(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(p, []byte("# generated\nnameserver 10.213.47.1\nnameserver 127.0.0.1\nsearch x\nnameserver ::1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ups, err := takeOverResolvConf(p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ups, []string{"10.213.47.1:53"}) {
		t.Errorf("upstreams %v: want the bridge resolver only (never itself)", ups)
	}
	b, _ := os.ReadFile(p)
	var ns []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "nameserver" {
			ns = append(ns, f[1])
		}
	}
	if !slices.Equal(ns, []string{"127.0.0.1"}) {
		t.Errorf("resolv.conf now names %v, want the stand-in only:\n%s", ns, b)
	}
}

// upstreamResolver answers data-api.capstone.test with 10.213.47.1 and
// refuses the rest, as the docker target's bridge resolver does.
func upstreamResolver(t *testing.T) string {
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if strings.EqualFold(r.Question[0].Name, "data-api.capstone.test.") && r.Question[0].Qtype == dns.TypeA {
			m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP("10.213.47.1").To4()})
		} else if !strings.EqualFold(r.Question[0].Name, "data-api.capstone.test.") {
			m.Rcode = dns.RcodeRefused
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

type fakeDNSWriter struct {
	dns.ResponseWriter
	got *dns.Msg
}

func (f *fakeDNSWriter) WriteMsg(m *dns.Msg) error { f.got = m; return nil }

// Allowed names go to the upstream (denied ones never do); with the
// credential proxy an allowed name's address becomes the interceptor's and
// the interceptor injects the vault's credential and forwards to the
// address the upstream gave.
func TestStandInForwardsAllowedNamesAndInjectsOverPlainHTTP(t *testing.T) {
	att := attach(t, `{"defaultAction":"deny","egress":[{"action":"allow","target":"data-api.capstone.test"},{"action":"allow","target":"pypi.org"}]}`, true)
	var logged []string
	up := upstreamDNS{servers: []string{upstreamResolver(t)}, timeout: 2 * time.Second}
	ask := func(h dnsHandler, name string) *dns.Msg {
		q := new(dns.Msg)
		q.SetQuestion(dns.Fqdn(name), dns.TypeA)
		w := &fakeDNSWriter{}
		h.ServeDNS(w, q)
		if w.got == nil || w.got.Id != q.Id {
			t.Fatalf("%s: no answer for the query", name)
		}
		return w.got
	}
	plain := dnsHandler{policy: att.Policy, upstream: up, outbound: func(h, e string) { logged = append(logged, h+"|"+e) }}
	if m := ask(plain, "data-api.capstone.test"); m.Rcode != dns.RcodeSuccess || len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "10.213.47.1" {
		t.Errorf("without the credential proxy: %v, want the upstream's address", m)
	}
	if m := ask(plain, "pypi.org"); m.Rcode != dns.RcodeServerFailure {
		t.Errorf("pypi.org: %s, want SERVFAIL (the upstream refused it; the real sidecar answers so)", dns.RcodeToString[m.Rcode])
	}
	if m := ask(plain, "exfil.capstone.test"); m.Rcode != dns.RcodeNameError {
		t.Errorf("a denied name: %s, want NXDOMAIN without asking upstream", dns.RcodeToString[m.Rcode])
	}
	if len(logged) != 2 || logged[0] != "data-api.capstone.test|" || !strings.HasPrefix(logged[1], "pypi.org|no upstream resolver answered: REFUSED from ") {
		t.Errorf("outbound log %q: allowed lookups only, as the real sidecar", logged)
	}
	none := dnsHandler{policy: att.Policy}
	if m := ask(none, "data-api.capstone.test"); m.Rcode != dns.RcodeServerFailure {
		t.Errorf("no upstream: %s, want SERVFAIL", dns.RcodeToString[m.Rcode])
	}

	proxied := dnsHandler{policy: att.Policy, upstream: up, mem: &resolved{}}
	if m := ask(proxied, "data-api.capstone.test"); len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "127.0.0.1" {
		t.Errorf("with the credential proxy: %v, want the interceptor's 127.0.0.1", m)
	}
	if got := proxied.mem.get("data-api.capstone.test"); len(got) != 1 || got[0].String() != "10.213.47.1" {
		t.Errorf("remembered %v", got)
	}

	// The vault, written through the API as the subject does.
	req := httptest.NewRequest("POST", "/credential-vault", strings.NewReader(`{"credentials":[{"name":"d","source":{"type":"inline","value":"real-token-123"}}],`+
		`"bindings":[{"name":"d","match":{"hosts":["data-api.capstone.test"],"schemes":["http"],"ports":[80]},"auth":{"type":"bearer","credential":"d"}}]}`))
	req.RemoteAddr = "127.0.0.1:4000"
	req.Header.Set(authHeader, att.Token())
	rec := httptest.NewRecorder()
	att.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /credential-vault: %d %s", rec.Code, rec.Body.String())
	}
	// The interceptor forwards to the remembered address: a test server
	// stands in for it (its port in place of 80 is the only liberty).
	var gotAuth, gotHost string
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotHost = r.Header.Get("Authorization"), r.Host
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, "ok")
	}))
	defer stub.Close()
	ic := interceptor{att: att, mem: proxied.mem}
	ic.port = portOf(t, stub.URL)
	proxied.mem.set("data-api.capstone.test", []net.IP{net.ParseIP("127.0.0.1")})
	r := httptest.NewRequest("GET", "http://data-api.capstone.test/v1/regional-targets", nil)
	r.Header.Set("Authorization", "Bearer placeholder")
	w := httptest.NewRecorder()
	ic.ServeHTTP(w, r)
	if w.Code != 200 || gotAuth != "Bearer real-token-123" || gotHost != "data-api.capstone.test" {
		t.Errorf("through the interceptor: %d, the stub saw Authorization %q Host %q", w.Code, gotAuth, gotHost)
	}
	if e := w.Header().Get("X-Echo"); strings.Contains(e, "real-token-123") {
		t.Errorf("the secret came back in a response header: %q", e)
	}
	r = httptest.NewRequest("GET", "http://exfil.capstone.test/collect", nil)
	w = httptest.NewRecorder()
	ic.ServeHTTP(w, r)
	if w.Code != http.StatusForbidden {
		t.Errorf("a denied host through the interceptor: %d, want 403", w.Code)
	}
}

func portOf(t *testing.T, u string) string {
	_, p, err := net.SplitHostPort(strings.TrimPrefix(u, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
