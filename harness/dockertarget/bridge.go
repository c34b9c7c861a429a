package dockertarget

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/ory/dockertest/v3"

	"github.com/osb-capstone/acceptance/internal/fullduplex"
)

// The stub services a docker-target run offers its sandboxes on the engine's
// own bridge address (docs/docker.md, "The vault on the docker target"):
//
//   - a resolver on <bridge address>:53 (UDP and TCP) that answers the stub
//     names only (A: the bridge address) and REFUSED for every other name:
//     it never forwards a query, so nothing resolves off the machine. The
//     engine names it as every container's resolver (.ci/docker-engine.sh,
//     --dns), so the egress sidecar, which takes its upstream resolvers from
//     the container's resolv.conf, forwards the names its policy allows to it;
//   - the stubs' front on <bridge address>:80 (plain HTTP: a sidecar's
//     mitmproxy would refuse a stub certificate, and the vault binds http on
//     port 80), forwarding by Host to the stub's loopback server;
//   - the TLS front on <bridge address>:443 (bridge_tls.go), when the run
//     offers stubs over HTTPS (the stub package index as pypi.org and
//     files.pythonhosted.org), with a certificate of the machine's stub CA;
//   - the INPUT exceptions that let the bridge reach those ports of the
//     bridge address and nothing else (the engine drops every other new
//     connection from the bridge to the host), removed when the run ends.
//
// The engine's run lock (acquireLock) is held while they run: two runs on one
// engine never hold port 53 or 80 of its bridge at once, and a bind that
// fails anyway (a run outside that lock) is reported, never shared.

// vaultRuleComment marks the INPUT exceptions; it starts with the engine's
// own mark, so `.ci/docker-engine.sh stop` removes a crashed run's too.
const vaultRuleComment = "osb-acceptance-docker-vault"

// bridgeDNSTTL is the TTL of the resolver's answers (seconds).
const bridgeDNSTTL = 30

// stubResolver answers the stub names (lower case, no trailing dot) with the
// bridge address: A for IPv4, an empty answer (NOERROR) for any other type
// of a stub name, REFUSED for every other name and FORMERR for a malformed
// query. It never forwards.
type stubResolver struct {
	addr  net.IP
	names map[string]bool
}

func (s stubResolver) reply(req *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Authoritative = true
	m.RecursionAvailable = false
	if len(req.Question) != 1 || req.Opcode != dns.OpcodeQuery {
		m.Authoritative = false
		m.Rcode = dns.RcodeFormatError
		return m
	}
	q := req.Question[0]
	name := strings.ToLower(strings.TrimSuffix(q.Name, "."))
	if q.Qclass != dns.ClassINET || !s.names[name] {
		m.Authoritative = false
		m.Rcode = dns.RcodeRefused
		return m
	}
	if q.Qtype == dns.TypeA && s.addr.To4() != nil {
		m.Answer = append(m.Answer, &dns.A{
			Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: bridgeDNSTTL},
			A:   s.addr.To4(),
		})
	}
	return m
}

func (s stubResolver) ServeDNS(w dns.ResponseWriter, req *dns.Msg) { _ = w.WriteMsg(s.reply(req)) }

// iptables is the host's packet filter, as the vault rules use it: the host's
// iptables command (hostIPTables), or a test's fake handed to one Bridge.
type iptables interface {
	// run runs iptables with args.
	run(args ...string) error
	// list prints a chain's rules (iptables -S).
	list(chain string) (string, error)
}

// hostIPTables runs the host's iptables command.
type hostIPTables struct{}

func (hostIPTables) run(args ...string) error {
	out, err := exec.Command("iptables", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("iptables %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (hostIPTables) list(chain string) (string, error) {
	out, err := exec.Command("iptables", "-w", "-S", chain).Output()
	return string(out), err
}

// vaultRules are the INPUT exceptions for a bridge: DNS (UDP and TCP) and
// HTTP to the bridge's own address, from the bridge only.
func vaultRules(iface string, addr net.IP) [][]string {
	var out [][]string
	for _, pp := range [][2]string{{"udp", "53"}, {"tcp", "53"}, {"tcp", "80"}} {
		out = append(out, []string{"-i", iface, "-d", addr.String() + "/32", "-p", pp[0], "-m", pp[0], "--dport", pp[1],
			"-m", "comment", "--comment", vaultRuleComment, "-j", "ACCEPT"})
	}
	return out
}

// addVaultRules inserts the exceptions first in INPUT (before the engine's
// DROP); on a failure it removes those it added.
func addVaultRules(ipt iptables, iface string, addr net.IP) error {
	rules := vaultRules(iface, addr)
	for i, r := range rules {
		if err := ipt.run(append([]string{"-w", "-I", "INPUT", "1"}, r...)...); err != nil {
			for _, done := range rules[:i] {
				_ = ipt.run(append([]string{"-w", "-D", "INPUT"}, done...)...)
			}
			return err
		}
	}
	return nil
}

// removeVaultRules deletes every INPUT rule carrying the mark for iface (a
// crashed run's too, each as many times as it is there).
func removeVaultRules(ipt iptables, iface string) error {
	list, err := ipt.list("INPUT")
	if err != nil {
		return fmt.Errorf("listing INPUT: %w", err)
	}
	var errs []error
	for _, line := range strings.Split(list, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "-A INPUT ") || !strings.Contains(line, "--comment "+vaultRuleComment) ||
			!strings.Contains(line, "-i "+iface+" ") {
			continue
		}
		spec := strings.Fields(strings.TrimPrefix(line, "-A INPUT "))
		if err := ipt.run(append([]string{"-w", "-D", "INPUT"}, spec...)...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Bridge is the engine's bridge: its interface and its own address.
type Bridge struct {
	Iface string
	Addr  net.IP
	// ipt is the packet filter its vault rules go in (nil: the host's
	// iptables; a test hands a fake to the one bridge it makes).
	ipt iptables
	// Attribute names the sandbox whose container holds a request's source
	// address ("": none), for the front to say who sent it (bridge_attr.go);
	// nil: the front names nobody.
	Attribute func(net.IP) string
}

// iptables is the bridge's packet filter.
func (b Bridge) iptables() iptables {
	if b.ipt == nil {
		return hostIPTables{}
	}
	return b.ipt
}

// engineBridge finds the engine's default bridge network: its gateway (the
// host's address on it) and the interface that holds that address.
func engineBridge(pool *dockertest.Pool) (Bridge, error) {
	nw, err := pool.Client.NetworkInfo("bridge")
	if err != nil {
		return Bridge{}, fmt.Errorf("the engine's bridge network: %w", err)
	}
	var gw net.IP
	for _, c := range nw.IPAM.Config {
		if ip := net.ParseIP(c.Gateway); ip != nil && ip.To4() != nil {
			gw = ip
			break
		}
	}
	if gw == nil {
		return Bridge{}, errors.New("the engine's bridge network has no IPv4 gateway")
	}
	name := nw.Options["com.docker.network.bridge.name"]
	if name == "" {
		name = ifaceWith(gw)
	}
	if name == "" {
		return Bridge{}, fmt.Errorf("no interface of this host holds the bridge address %s", gw)
	}
	return Bridge{Iface: name, Addr: gw}, nil
}

func ifaceWith(ip net.IP) string {
	ifs, _ := net.Interfaces()
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return i.Name
			}
		}
	}
	return ""
}

// engineDNS is what the engine gives containers as their resolvers, read
// from the project's engine's command line (--dns; the pid file next to its
// socket). ok is false when it cannot be told (another engine).
func engineDNS(endpoint string) (servers []string, ok bool) {
	sock := strings.TrimPrefix(endpoint, "unix://")
	if sock == endpoint {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(sock), "dockerd.pid"))
	if err != nil {
		return nil, false
	}
	cmdline, err := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/cmdline")
	if err != nil {
		return nil, false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return dnsFlags(args), true
}

// dnsFlags are the values of dockerd's --dns flags.
func dnsFlags(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--dns" && i+1 < len(args):
			out = append(out, args[i+1])
			i++
		case strings.HasPrefix(a, "--dns="):
			out = append(out, strings.TrimPrefix(a, "--dns="))
		}
	}
	return out
}

// BridgeServices are the resolver, the stubs' front and the INPUT
// exceptions of one run.
type BridgeServices struct {
	Bridge Bridge
	// Stubs maps each stub name to the loopback URL of the stub serving it.
	Stubs map[string]string

	// TLSStubs maps each name served over HTTPS on :443 to its stub's
	// loopback URL (nil: no TLS front).
	TLSStubs map[string]string

	udp, tcp  *dns.Server
	pc        net.PacketConn
	dl        net.Listener
	http      *http.Server
	https     *http.Server // the TLS front (nil: none)
	tl        net.Listener // its listener (closed by stop, started or not)
	closeOnce sync.Once
	closeErr  error
}

// StartBridgeServices binds the resolver and the front on the bridge address
// (never 0.0.0.0), then opens the INPUT exceptions. stubs maps each name to
// the stub's loopback URL (http://127.0.0.1:port).
func StartBridgeServices(b Bridge, stubs map[string]string) (*BridgeServices, error) {
	return StartBridgeServicesTLS(b, stubs, nil)
}

// StartBridgeServicesTLS is StartBridgeServices with a TLS front on :443 for
// front's stubs (nil: none); the resolver answers their names too.
func StartBridgeServicesTLS(b Bridge, stubs map[string]string, front *TLSFront) (*BridgeServices, error) {
	if len(stubs) == 0 && (front == nil || len(front.Stubs) == 0) {
		return nil, errors.New("no stub to serve")
	}
	tlsTargets, err := front.targets()
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	targets := map[string]*url.URL{}
	for name, raw := range stubs {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("stub %s: want http://127.0.0.1:port, got %q", name, raw)
		}
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("stub %s: %q is not a loopback URL", name, raw)
		}
		n := strings.ToLower(strings.TrimSuffix(name, "."))
		names[n] = true
		targets[n] = u
	}
	for n := range tlsTargets {
		names[n] = true
	}
	s := &BridgeServices{Bridge: b, Stubs: stubs}
	host := b.Addr.String()
	pc, err := net.ListenPacket("udp4", net.JoinHostPort(host, "53"))
	if err != nil {
		return nil, fmt.Errorf("the resolver on %s:53/udp: %w (is another docker-target run using this engine outside its lock?)", host, err)
	}
	dl, err := net.Listen("tcp4", net.JoinHostPort(host, "53"))
	if err != nil {
		_ = pc.Close()
		return nil, fmt.Errorf("the resolver on %s:53/tcp: %w", host, err)
	}
	hl, err := net.Listen("tcp4", net.JoinHostPort(host, "80"))
	if err != nil {
		_ = pc.Close()
		_ = dl.Close()
		return nil, fmt.Errorf("the stubs' front on %s:80: %w (is another docker-target run using this engine outside its lock?)", host, err)
	}
	var tl net.Listener
	if len(tlsTargets) > 0 {
		if tl, err = front.listen(host); err != nil {
			_ = pc.Close()
			_ = dl.Close()
			_ = hl.Close()
			return nil, err
		}
		s.TLSStubs, s.tl = front.Stubs, tl
		s.https = front.server(tlsTargets)
	}
	h := stubResolver{addr: b.Addr, names: names}
	s.pc, s.dl = pc, dl
	s.udp = &dns.Server{PacketConn: pc, Handler: h}
	s.tcp = &dns.Server{Listener: dl, Handler: h}
	s.http = &http.Server{Handler: attributed(b.Attribute, stubFront(targets)), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = s.udp.ActivateAndServe() }()
	go func() { _ = s.tcp.ActivateAndServe() }()
	go func() { _ = s.http.Serve(hl) }()
	if tl != nil {
		go func() { _ = s.https.ServeTLS(tl, "", "") }()
	}
	if err := addVaultRules(b.iptables(), b.Iface, b.Addr); err != nil {
		s.stop()
		return nil, fmt.Errorf("opening the bridge to the stubs: %w", err)
	}
	if tl != nil {
		if err := addTLSRule(b.iptables(), b.Iface, b.Addr); err != nil {
			_ = removeVaultRules(b.iptables(), b.Iface)
			s.stop()
			return nil, fmt.Errorf("opening the bridge to the stubs' TLS front: %w", err)
		}
	}
	return s, nil
}

// stubFront forwards a request to the stub its Host names; any other Host is
// 404 (the front serves the stubs and nothing else).
func stubFront(targets map[string]*url.URL) http.Handler {
	tr := &http.Transport{Proxy: nil, DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext, DisableKeepAlives: true}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		u, ok := targets[strings.ToLower(strings.TrimSuffix(host, "."))]
		if !ok {
			http.Error(w, "no stub serves "+host+" here", http.StatusNotFound)
			return
		}
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(u)
				pr.Out.Host = pr.In.Host // the stub sees the name the sandbox asked for
				pr.SetXForwarded()       // the sandbox's address (incoming X-Forwarded-* are dropped first)
			},
			Transport: tr,
		}
		// Full duplex (internal/fullduplex): the stub may answer before it
		// has the whole request body.
		defer fullduplex.Enable(w, r)()
		rp.ServeHTTP(w, r)
	})
}

func (s *BridgeServices) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.http.Shutdown(ctx)
	_ = s.http.Close()
	if s.https != nil {
		_ = s.https.Shutdown(ctx)
		_ = s.https.Close()
		_ = s.tl.Close() // a server not started yet ignores Close
	}
	_ = s.udp.Shutdown()
	_ = s.tcp.Shutdown()
	_ = s.pc.Close() // a server not started yet ignores Shutdown
	_ = s.dl.Close()
}

// Close removes the INPUT exceptions and stops the resolver and the front;
// safe to call more than once.
func (s *BridgeServices) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		s.closeErr = removeVaultRules(s.Bridge.iptables(), s.Bridge.Iface)
		s.stop()
	})
	return s.closeErr
}
