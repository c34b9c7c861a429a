package dockertarget

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func query(name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	return m
}

// The resolver answers the stub names only, with the bridge address, and
// refuses every other name: it never forwards anything.
func TestStubResolverAnswersOnlyTheStubNames(t *testing.T) {
	r := stubResolver{addr: net.ParseIP("10.213.47.1"), names: map[string]bool{"data-api.capstone.test": true}}
	for _, tc := range []struct {
		name  string
		qtype uint16
		rcode int
		a     string
	}{
		{"data-api.capstone.test", dns.TypeA, dns.RcodeSuccess, "10.213.47.1"},
		{"DATA-API.Capstone.Test", dns.TypeA, dns.RcodeSuccess, "10.213.47.1"},
		{"data-api.capstone.test", dns.TypeAAAA, dns.RcodeSuccess, ""}, // NODATA: no IPv6 on the bridge
		{"pypi.org", dns.TypeA, dns.RcodeRefused, ""},
		{"exfil.capstone.test", dns.TypeA, dns.RcodeRefused, ""},
		{"x.data-api.capstone.test", dns.TypeA, dns.RcodeRefused, ""},
		{"example.com", dns.TypeA, dns.RcodeRefused, ""},
		{".", dns.TypeNS, dns.RcodeRefused, ""}, // the real sidecar's upstream probe: an answer, so it counts the resolver alive
	} {
		m := r.reply(query(tc.name, tc.qtype))
		if m.Rcode != tc.rcode {
			t.Errorf("%s %s: rcode %s, want %s", tc.name, dns.TypeToString[tc.qtype], dns.RcodeToString[m.Rcode], dns.RcodeToString[tc.rcode])
		}
		var got []string
		for _, rr := range m.Answer {
			if a, ok := rr.(*dns.A); ok {
				got = append(got, a.A.String())
			}
		}
		if want := tc.a; (want == "" && len(got) != 0) || (want != "" && !slices.Equal(got, []string{want})) {
			t.Errorf("%s %s: answers %v, want %q", tc.name, dns.TypeToString[tc.qtype], got, want)
		}
		if tc.rcode == dns.RcodeRefused && m.RecursionAvailable {
			t.Errorf("%s: the resolver must not offer recursion", tc.name)
		}
	}
	bad := query("data-api.capstone.test", dns.TypeA)
	bad.Question = append(bad.Question, bad.Question[0])
	if m := r.reply(bad); m.Rcode != dns.RcodeFormatError {
		t.Errorf("two questions: rcode %s, want FORMERR", dns.RcodeToString[m.Rcode])
	}
	chaos := query("data-api.capstone.test", dns.TypeA)
	chaos.Question[0].Qclass = dns.ClassCHAOS
	if m := r.reply(chaos); m.Rcode != dns.RcodeRefused {
		t.Errorf("class CHAOS: rcode %s, want REFUSED", dns.RcodeToString[m.Rcode])
	}
}

// fakeIPTables records the INPUT chain as iptables would hold it.
type fakeIPTables struct {
	mu    sync.Mutex
	rules []string // "-A INPUT …" lines, first rule first
	calls []string
	fail  string // an argument that makes a call fail
}

func (f *fakeIPTables) run(args ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	line := strings.Join(args, " ")
	f.calls = append(f.calls, line)
	if f.fail != "" && strings.Contains(line, f.fail) {
		return &net.AddrError{Err: "refused by the test", Addr: f.fail}
	}
	switch {
	case len(args) > 4 && args[1] == "-I" && args[2] == "INPUT" && args[3] == "1":
		f.rules = append([]string{"-A INPUT " + strings.Join(args[4:], " ")}, f.rules...)
	case len(args) > 3 && args[1] == "-D" && args[2] == "INPUT":
		want := "-A INPUT " + strings.Join(args[3:], " ")
		for i, r := range f.rules {
			if r == want {
				f.rules = append(f.rules[:i], f.rules[i+1:]...)
				return nil
			}
		}
		return &net.AddrError{Err: "no such rule", Addr: want}
	}
	return nil
}

func (f *fakeIPTables) list(chain string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return "-P INPUT ACCEPT\n" + strings.Join(f.rules, "\n") + "\n", nil
}

// The INPUT exceptions open exactly DNS (UDP, TCP) and HTTP to the bridge's
// own address, from the bridge only, ahead of the engine's DROP; they are
// removed at teardown, and a crashed run's leftovers too, while another
// bridge's and the engine's own rules stay.
func TestVaultRulesAddedFirstAndRemoved(t *testing.T) {
	f := &fakeIPTables{rules: []string{
		"-A INPUT -i osbacc0 -m conntrack --ctstate RELATED,ESTABLISHED -m comment --comment osb-acceptance-docker -j ACCEPT",
		"-A INPUT -i osbacc0 -m comment --comment osb-acceptance-docker -j DROP",
		"-A INPUT -i other0 -d 10.9.9.1/32 -p tcp -m tcp --dport 80 -m comment --comment osb-acceptance-docker-vault -j ACCEPT",
	}}
	engine := slices.Clone(f.rules[:2])
	addr := net.ParseIP("10.213.47.1")
	if err := addVaultRules(f, "osbacc0", addr); err != nil {
		t.Fatal(err)
	}
	if len(f.rules) != 6 {
		t.Fatalf("rules after add: %q", f.rules)
	}
	var ports []string
	for _, r := range f.rules[:3] {
		for _, must := range []string{"-i osbacc0 ", "-d 10.213.47.1/32 ", "--comment " + vaultRuleComment, "-j ACCEPT"} {
			if !strings.Contains(r+" ", must) {
				t.Errorf("exception %q lacks %q", r, must)
			}
		}
		if strings.Contains(r, "0.0.0.0") || strings.Contains(r, "-s ") {
			t.Errorf("exception %q is wider than the bridge address", r)
		}
		f := strings.Fields(r)
		ports = append(ports, f[slices.Index(f, "-p")+1]+"/"+f[slices.Index(f, "--dport")+1])
	}
	slices.Sort(ports)
	if !slices.Equal(ports, []string{"tcp/53", "tcp/80", "udp/53"}) {
		t.Errorf("exceptions open %v, want DNS over udp and tcp and HTTP only", ports)
	}
	if idx := slices.Index(f.rules, engine[1]); idx < 3 {
		t.Errorf("the engine's DROP is at %d, ahead of the exceptions: %q", idx, f.rules)
	}
	// A crashed run's leftover exception (twice) goes too.
	f.rules = append([]string{f.rules[0]}, f.rules...)
	if err := removeVaultRules(f, "osbacc0"); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(engine), "-A INPUT -i other0 -d 10.9.9.1/32 -p tcp -m tcp --dport 80 -m comment --comment osb-acceptance-docker-vault -j ACCEPT")
	if !slices.Equal(f.rules, want) {
		t.Errorf("after removal:\n%s\nwant:\n%s", strings.Join(f.rules, "\n"), strings.Join(want, "\n"))
	}
}

// An exception that cannot be added leaves none of the others behind.
func TestVaultRulesRolledBackOnFailure(t *testing.T) {
	f := &fakeIPTables{fail: "--dport 80"}
	if err := addVaultRules(f, "osbacc0", net.ParseIP("10.213.47.1")); err == nil {
		t.Fatal("want the failure reported")
	}
	if len(f.rules) != 0 {
		t.Errorf("left behind: %q", f.rules)
	}
}

func TestDNSFlags(t *testing.T) {
	got := dnsFlags([]string{"dockerd", "--bridge", "osbacc0", "--dns", "10.213.47.1", "--dns=127.0.0.1", "--dns"})
	if !slices.Equal(got, []string{"10.213.47.1", "127.0.0.1"}) {
		t.Errorf("dnsFlags: %q", got)
	}
}

// StartBridgeServices on a loopback address standing in for the bridge:
// the resolver and the front answer there (and only there), the front
// reaches the stub with the Host the client asked for and the client's
// address, refuses other hosts, and two runs cannot hold the ports at once.
func TestBridgeServicesServeAndCollide(t *testing.T) {
	f := &fakeIPTables{}
	var gotHost, gotXFF string
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHost, gotXFF = r.Host, r.Header.Get("X-Forwarded-For")
		_, _ = io.WriteString(w, "stub "+r.URL.Path)
	}))
	defer stub.Close()
	// A loopback address of its own (127.0.0.0/8 is all loopback on Linux),
	// so ports 53 and 80 are free whatever else runs on the machine.
	addr := net.ParseIP("127.213.47.1")
	b := Bridge{Iface: "lo-test", Addr: addr, ipt: f}
	s, err := StartBridgeServices(b, map[string]string{"data-api.capstone.test": stub.URL})
	if err != nil {
		t.Skipf("not measured: cannot bind ports 53/80 on %s here: %v", addr, err)
	}
	defer s.Close()
	if len(f.rules) != 3 {
		t.Errorf("exceptions while running: %q", f.rules)
	}

	c := &dns.Client{Timeout: 3 * time.Second}
	for _, netw := range []string{"udp", "tcp"} {
		c.Net = netw
		in, _, err := c.Exchange(query("data-api.capstone.test", dns.TypeA), addr.String()+":53")
		if err != nil {
			t.Fatalf("%s: %v", netw, err)
		}
		if len(in.Answer) != 1 || in.Answer[0].(*dns.A).A.String() != addr.String() {
			t.Errorf("%s: answer %v", netw, in.Answer)
		}
		in, _, err = c.Exchange(query("pypi.org", dns.TypeA), addr.String()+":53")
		if err != nil || in.Rcode != dns.RcodeRefused {
			t.Errorf("%s: pypi.org: %v %v, want REFUSED", netw, err, in)
		}
	}

	req, _ := http.NewRequest("GET", "http://"+addr.String()+"/v1/regional-targets", nil)
	req.Host = "data-api.capstone.test"
	req.Header.Set("X-Forwarded-For", "6.6.6.6") // a client's claim is dropped
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "stub /v1/regional-targets" {
		t.Errorf("front: %d %q", resp.StatusCode, body)
	}
	if gotHost != "data-api.capstone.test" || gotXFF != "127.0.0.1" {
		t.Errorf("the stub saw Host %q, X-Forwarded-For %q; want the name asked for and the client's own address", gotHost, gotXFF)
	}
	req.Host = "exfil.capstone.test"
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another host through the front: %d, want 404", resp.StatusCode)
	}
	// Bound to the bridge address itself, never the wildcard.
	for _, a := range []net.Addr{s.pc.LocalAddr(), s.dl.Addr()} {
		if host, _, _ := net.SplitHostPort(a.String()); host != addr.String() {
			t.Errorf("listening on %s, want %s only", a, addr)
		}
	}

	// A second run on the same bridge address is refused with a clear error.
	if s2, err := StartBridgeServices(b, map[string]string{"data-api.capstone.test": stub.URL}); err == nil {
		s2.Close()
		t.Fatal("a second run bound the same bridge ports")
	} else if !strings.Contains(err.Error(), "another docker-target run") {
		t.Errorf("collision error: %v", err)
	}
	if len(f.rules) != 3 {
		t.Errorf("the refused run touched the exceptions: %q", f.rules)
	}

	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.rules) != 0 {
		t.Errorf("exceptions after Close: %q", f.rules)
	}
	if _, _, err := (&dns.Client{Timeout: 500 * time.Millisecond, Net: "tcp"}).Exchange(query("data-api.capstone.test", dns.TypeA), addr.String()+":53"); err == nil {
		t.Error("the resolver still answers after Close")
	}
	// The ports are free again for the next run.
	s3, err := StartBridgeServices(b, map[string]string{"data-api.capstone.test": stub.URL})
	if err != nil {
		t.Fatalf("the next run: %v", err)
	}
	_ = s3.Close()
}

func TestBridgeServicesRefuseNonLoopbackStubs(t *testing.T) {
	f := &fakeIPTables{}
	b := Bridge{Iface: "lo-test", Addr: net.ParseIP("127.213.47.2"), ipt: f}
	for _, u := range []string{"http://10.0.0.1:80", "https://127.0.0.1:1", "not a url"} {
		if s, err := StartBridgeServices(b, map[string]string{"data-api.capstone.test": u}); err == nil {
			s.Close()
			t.Errorf("stub %q accepted", u)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("iptables touched: %q", f.calls)
	}
}

// A run on an engine whose containers do not resolve through the bridge
// address says so (the vault scenario then gives that reason).
func TestResolverNote(t *testing.T) {
	addr := net.ParseIP("10.213.47.1")
	if n := resolverNote([]string{"10.213.47.1"}, true, addr); n != "" {
		t.Errorf("wired: %q", n)
	}
	if n := resolverNote([]string{"127.0.0.1"}, true, addr); !strings.Contains(n, "resolver 127.0.0.1, not the bridge address 10.213.47.1") || !strings.Contains(n, "restart it") {
		t.Errorf("old engine: %q", n)
	}
	if n := resolverNote(nil, true, addr); !strings.Contains(n, "host's resolv.conf") {
		t.Errorf("no --dns: %q", n)
	}
	if n := resolverNote(nil, false, addr); !strings.Contains(n, "cannot be read") {
		t.Errorf("unknown: %q", n)
	}
	// The project's running engine, read from its pid file, when there is one.
	if servers, ok := engineDNS("unix://" + DefaultSocket); ok {
		t.Logf("the project's engine gives containers %v", servers)
	}
}
