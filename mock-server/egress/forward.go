package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/internal/fullduplex"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// tunnelMeta is what the gateway decided when it accepted a tunnel.
type tunnelMeta struct {
	att      *Attachment
	host     string
	port     int
	phase    string
	scheme   string // http | https (sniffed)
	upstream *url.URL
}

type metaKey struct{}

// tunnelConn is an accepted tunnel handed to the forwarder's HTTP server.
type tunnelConn struct {
	net.Conn
	raw  net.Conn
	meta *tunnelMeta
	once sync.Once
}

func (c *tunnelConn) Close() error {
	c.once.Do(func() { c.meta.att.untrack(c.raw) })
	return c.Conn.Close()
}

// chanListener feeds tunnels to an http.Server.
type chanListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return &net.UnixAddr{Name: "egress-forwarder", Net: "unix"} }

// forwarder serves HTTP on every accepted tunnel (after TLS termination for
// TLS tunnels), re-checks the policy per request, injects vault credentials
// and forwards to the tunnel's upstream.
type forwarder struct {
	hub *Hub
	ln  *chanListener
	srv *http.Server
}

func newForwarder(h *Hub) *forwarder {
	f := &forwarder{hub: h, ln: &chanListener{ch: make(chan net.Conn), done: make(chan struct{})}}
	f.srv = &http.Server{
		Handler:           f,
		ReadHeaderTimeout: 60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if tc, ok := c.(*tunnelConn); ok {
				return context.WithValue(ctx, metaKey{}, tc.meta)
			}
			return ctx
		},
		ErrorLog: nil,
	}
	go func() { _ = f.srv.Serve(f.ln) }()
	return f
}

func (f *forwarder) close() {
	_ = f.srv.Close()
	_ = f.ln.Close()
}

// serveTunnel sniffs the first byte (0x16 = TLS handshake) and hands the
// tunnel to the HTTP server.
func (f *forwarder) serveTunnel(a *Attachment, c net.Conn, m *tunnelMeta) {
	if !a.track(c) {
		_ = c.Close()
		return
	}
	go func() {
		br := bufio.NewReader(c)
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
		first, err := br.Peek(1)
		_ = c.SetReadDeadline(time.Time{})
		if err != nil {
			a.untrack(c)
			_ = c.Close()
			return
		}
		var conn net.Conn = &bufConn{Conn: c, r: br}
		m.scheme = "http"
		if first[0] == 0x16 {
			m.scheme = "https"
			conn = tls.Server(conn, f.hub.ca.serverConfig(m.host))
		}
		tc := &tunnelConn{Conn: conn, raw: c, meta: m}
		select {
		case f.ln.ch <- tc:
		case <-f.ln.done:
			_ = tc.Close()
		}
	}()
}

func (f *forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m, _ := r.Context().Value(metaKey{}).(*tunnelMeta)
	if m == nil {
		http.Error(w, "egress gateway: no tunnel context", http.StatusInternalServerError)
		return
	}
	a := m.att
	reqHost := r.Host
	if h, _, err := net.SplitHostPort(reqHost); err == nil {
		reqHost = h
	}
	if reqHost == "" {
		reqHost = m.host
	}
	if normalizeHost(reqHost) != m.host {
		a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindEgress, Egress: &wire.Egress{
			Phase: m.phase, Host: normalizeHost(reqHost), Port: m.port, Decision: "deny", Rule: "host-mismatch",
			Reason: fmt.Sprintf("request Host %q inside a tunnel opened for %q", reqHost, m.host),
		}})
		http.Error(w, fmt.Sprintf("egress gateway: misdirected request: Host %q does not match the connection's destination %q", reqHost, m.host), http.StatusMisdirectedRequest)
		return
	}
	// Re-check: a policy change (or a deny override) applies to open
	// connections at their next request.
	a.mu.RLock()
	p := a.policy
	vlt := a.vault
	a.mu.RUnlock()
	if d := a.hub.decide(a.id, p, m.host); !d.Allowed {
		a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindEgress, Egress: &wire.Egress{
			Phase: m.phase, Host: m.host, Port: m.port, Decision: "deny", Rule: d.Rule,
			Reason: "policy changed while the connection was open",
		}})
		a.hub.notifyDenied(a.id, m.host)
		http.Error(w, fmt.Sprintf("egress denied by policy: %s (rule %s)", m.host, d.Rule), http.StatusForbidden)
		return
	}
	// What the sandbox sent, before the vault touches it (watch.go).
	sentHeader, authClass := r.Header.Clone(), authorizationClass(r.Header)
	var tap *bodyTap
	if r.Body != nil && r.Body != http.NoBody {
		tap = newBodyTap(r.Body)
		r.Body = tap
	}
	injected := false
	status := 0
	defer func() {
		req := &wire.EgressRequest{Host: m.host, Method: r.Method, Path: r.URL.RequestURI(), Status: status,
			Authorization: authClass, Injected: injected}
		var head []byte
		if tap != nil {
			req.BodyBytes, req.BodySHA256, head = tap.seen()
		}
		if a.hub.cfg.Watched != nil {
			req.Watched = watchedIn(a.hub.cfg.Watched(), r.URL.RequestURI(), sentHeader, head)
		}
		a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindEgressRequest, EgressRequest: req})
	}()
	var secrets []string
	if vlt != nil {
		inj, ambiguous := vlt.match(m.scheme, m.port, r.Method, r.URL.Path, m.host)
		if ambiguous {
			status = http.StatusForbidden
			http.Error(w, "credential binding ambiguous", http.StatusForbidden)
			return
		}
		if inj != nil {
			injected = true
			inj.apply(r.Header)
			a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindVault, Vault: &wire.Vault{
				Op: "inject", Revision: inj.revision, Binding: inj.binding, Host: m.host,
			}})
		}
		secrets = vlt.secrets()
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(m.upstream)
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Proxy-Connection")
			pr.Out.Header.Del("Proxy-Authorization")
			// The sandbox it came from, for the harness's stubs (a loopback
			// upstream): what a stub logs without it never came through the
			// gateway. A sandbox cannot set it: its own is replaced.
			pr.Out.Header.Del(wire.EgressSandboxHeader)
			if isLoopbackHost(m.upstream.Hostname()) {
				pr.Out.Header.Set(wire.EgressSandboxHeader, a.id)
			}
		},
		Transport: f.hub.transport,
		ModifyResponse: func(resp *http.Response) error {
			status = resp.StatusCode
			if len(secrets) > 0 && redactHeaders(resp.Header, secrets) {
				a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindVault, Vault: &wire.Vault{Op: "redact", Host: m.host}})
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			status = http.StatusBadGateway
			http.Error(w, fmt.Sprintf("egress gateway: upstream for %s failed: %v", m.host, err), http.StatusBadGateway)
		},
	}
	// Full duplex (internal/fullduplex): the upstream may answer before
	// it has the whole request body.
	defer fullduplex.Enable(w, r)()
	rp.ServeHTTP(w, r)
}
