package standin

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/osb-capstone/acceptance/internal/fullduplex"
	"github.com/osb-capstone/acceptance/mock-server/egress"
)

// The stand-in's upstream side, as the real sidecar has one (CONTRACT §3.4,
// §3.5): the real sidecar takes its upstream resolvers from the container's
// resolv.conf and redirects the sandbox's port 53 to itself with iptables;
// with credentialProxy its mitmproxy intercepts ports 80 and 443 and injects
// the vault's credentials. The stand-in installs no iptables rules, so:
//
//   - it reads the upstream resolvers from /etc/resolv.conf and then points
//     that file at itself (127.0.0.1): a sandbox joins its sidecar's network
//     namespace and shares its resolv.conf (Docker gives a container that
//     joins another's network that container's file), so the sandbox asks the
//     stand-in, as the redirect makes it ask the real sidecar;
//   - an allowed name is forwarded to those upstreams (on the docker target:
//     the harness's resolver on the bridge, which knows the stub names only);
//   - with credentialProxy, an allowed name's A answer is rewritten to
//     127.0.0.1 and a plain-HTTP proxy on 127.0.0.1:80 injects the vault's
//     credentials and forwards to the address the upstream gave. Plain HTTP
//     only: no TLS is intercepted (the docker target serves its data API over
//     http, docs/docker.md); on 127.0.0.1:443 a relay splices TLS unopened to
//     port 443 of the address the upstream gave for the ClientHello's server
//     name (tlspass.go: the docker target's stub package index).

// resolvConf is the container's resolver file.
var resolvConf = "/etc/resolv.conf"

// takeOverResolvConf returns the nameservers resolv.conf names (except the
// stand-in's own loopback address) and rewrites it to name 127.0.0.1 only.
func takeOverResolvConf(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	var ups []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "nameserver" {
			ip := net.ParseIP(fields[1])
			if ip == nil || ip.IsLoopback() {
				continue
			}
			ups = append(ups, net.JoinHostPort(ip.String(), "53"))
		}
	}
	f.Close()
	body := "# the egress stand-in answers DNS for this sandbox (its upstreams: " + strings.Join(ups, " ") + ")\nnameserver 127.0.0.1\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		return ups, err
	}
	return ups, nil
}

// forwarder asks the upstream resolvers, in order.
type upstreamDNS struct {
	servers []string
	timeout time.Duration
}

// exchange forwards q; nil with the last error when none answered.
func (u upstreamDNS) exchange(q *dns.Msg) (*dns.Msg, error) {
	if len(u.servers) == 0 {
		return nil, fmt.Errorf("no upstream resolver")
	}
	var last error
	for _, s := range u.servers {
		// UDP, then once over TCP: a datagram lost on a loaded bridge
		// (seen once in ten runs) costs one timeout, not the lookup.
		for _, netw := range []string{"udp", "tcp"} {
			c := &dns.Client{Net: netw, Timeout: u.timeout}
			resp, _, err := c.Exchange(q.Copy(), s)
			if err != nil || resp == nil {
				last = fmt.Errorf("%s: %v", netw, err)
				continue
			}
			// As the real sidecar: NOERROR and NXDOMAIN are final, any other
			// answer (REFUSED, SERVFAIL) moves on to the next upstream.
			if resp.Rcode == dns.RcodeSuccess || resp.Rcode == dns.RcodeNameError {
				return resp, nil
			}
			last = fmt.Errorf("%s from %s", dns.RcodeToString[resp.Rcode], s)
			break
		}
	}
	return nil, last
}

// resolved remembers, per name, the addresses the upstream gave for it (the
// interceptor's destinations).
type resolved struct {
	mu sync.Mutex
	m  map[string][]net.IP
}

func (r *resolved) set(name string, ips []net.IP) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string][]net.IP{}
	}
	r.m[name] = ips
}

func (r *resolved) get(name string) []net.IP {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[name]
}

// interceptAnswer rewrites the A records of an upstream answer for name to
// 127.0.0.1 (the interceptor) and remembers the upstream's addresses; AAAA
// records are dropped (the interceptor listens on IPv4 only).
func interceptAnswer(resp *dns.Msg, name string, mem *resolved) *dns.Msg {
	out := resp.Copy()
	out.Answer = nil
	var ips []net.IP
	for _, rr := range resp.Answer {
		switch a := rr.(type) {
		case *dns.A:
			ips = append(ips, a.A)
			c := *a
			c.A = net.IPv4(127, 0, 0, 1).To4()
			out.Answer = append(out.Answer, &c)
		case *dns.AAAA:
		default:
			out.Answer = append(out.Answer, rr)
		}
	}
	if len(ips) > 0 {
		mem.set(name, ips)
	}
	return out
}

// interceptor is the plain-HTTP side of the credential proxy.
type interceptor struct {
	att  *egress.Attachment
	mem  *resolved
	port string // the upstream port ("": 80; a test's server)
}

func (i interceptor) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if !i.att.Policy().Evaluate(host).Allowed {
		http.Error(w, "egress denied by policy: "+host, http.StatusForbidden)
		return
	}
	ips := i.mem.get(host)
	if len(ips) == 0 {
		http.Error(w, "egress stand-in: no upstream address for "+host+" (it was not resolved through the stand-in)", http.StatusBadGateway)
		return
	}
	_, ambiguous, secrets := i.att.InjectVault(r.Header, "http", 80, r.Method, r.URL.Path, host)
	if ambiguous {
		http.Error(w, "credential binding ambiguous", http.StatusForbidden)
		return
	}
	port := i.port
	if port == "" {
		port = "80"
	}
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort(ips[0].String(), port)}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: 10 * time.Second}).DialContext},
		ModifyResponse: func(resp *http.Response) error {
			egress.RedactHeaders(resp.Header, secrets)
			return nil
		},
	}
	// Full duplex (internal/fullduplex): the upstream may answer before
	// it has the whole request body.
	defer fullduplex.Enable(w, r)()
	rp.ServeHTTP(w, r)
}
