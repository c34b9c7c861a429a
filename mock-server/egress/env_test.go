package egress

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/egress/sidecar"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// recorder collects audit events.
type recorder struct {
	mu     sync.Mutex
	events []wire.Event
}

func (r *recorder) Record(ev wire.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.Seq = int64(len(r.events) + 1)
	r.events = append(r.events, ev)
}

func (r *recorder) all() []wire.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]wire.Event(nil), r.events...)
}

// egress returns the egress events for host (all hosts when host == "").
func (r *recorder) egress(host string) []wire.Egress {
	var out []wire.Egress
	for _, ev := range r.all() {
		if ev.Kind == wire.KindEgress && (host == "" || ev.Egress.Host == host) {
			out = append(out, *ev.Egress)
		}
	}
	return out
}

func (r *recorder) kind(k wire.Kind) []wire.Event {
	var out []wire.Event
	for _, ev := range r.all() {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

func (r *recorder) json(t *testing.T) string {
	b, err := json.Marshal(r.all())
	require.NoError(t, err)
	return string(b)
}

// stub is a loopback upstream standing in for a named host.
type stub struct {
	*httptest.Server
	name string
	mu   sync.Mutex
	reqs []*http.Request
}

func newStub(t testing.TB, name string) *stub {
	s := &stub{name: name}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.reqs = append(s.reqs, r.Clone(context.Background()))
		s.mu.Unlock()
		if v := r.Header.Get("Authorization"); v != "" {
			w.Header().Set("X-Echo-Authorization", v)
		}
		if v := r.Header.Get("X-Api-Key"); v != "" {
			w.Header().Set("X-Echo-Api-Key", v)
		}
		fmt.Fprintf(w, "stub %s host=%s path=%s", name, r.Host, r.URL.RequestURI())
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *stub) hits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

func (s *stub) last() *http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return nil
	}
	return s.reqs[len(s.reqs)-1]
}

type env struct {
	hub   *Hub
	att   *Attachment
	sc    *sidecar.Sidecar
	rec   *recorder
	stubs map[string]*stub
	pool  *x509.CertPool
}

type envOpts struct {
	policy          string
	credentialProxy bool
	stubs           []string // hostnames given a loopback stub
	webhook         string
	maxRules        int
	watched         func() map[string]string
}

// newEnv builds a hub with stubs, attaches one sandbox and starts a sidecar
// for it on loopback high ports. Nothing leaves the machine: every client in
// these tests dials the sidecar or the gateway by IP literal or unix socket.
func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	dir, err := os.MkdirTemp("", "egt") // short: unix socket paths are limited to 108 bytes
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	e := &env{rec: &recorder{}, stubs: map[string]*stub{}}
	ups := map[string]string{}
	for _, name := range o.stubs {
		s := newStub(t, name)
		e.stubs[name] = s
		ups[name] = s.URL
	}
	e.hub, err = NewHub(HubConfig{Upstreams: ups, StateDir: dir, Audit: e.rec, DenyWebhook: o.webhook, MaxRules: o.maxRules, Watched: o.watched})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.hub.Close() })
	p, err := ParsePolicy([]byte(o.policy))
	require.NoError(t, err)
	e.att, err = e.hub.Attach("sbx-test-1", p, o.credentialProxy)
	require.NoError(t, err)
	e.sc = startSidecar(t, e.att)
	e.pool = x509.NewCertPool()
	require.True(t, e.pool.AppendCertsFromPEM(e.hub.CACertPEM()))
	return e
}

// startSidecar runs a sidecar for att on loopback high ports.
func startSidecar(t testing.TB, att *Attachment) *sidecar.Sidecar {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sc, err := sidecar.Start(ctx, sidecar.Config{
		GatewaySocket: att.SocketPath(),
		DNSAddr:       "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", ProxyAddr: "127.0.0.1:0",
	})
	require.NoError(t, err)
	t.Cleanup(sc.Close)
	return sc
}

func splitPort(t testing.TB, addr string) (string, string) {
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	return h, p
}

// relayClient behaves like a program in the sandbox whose DNS answered
// 127.0.0.1: port 80 goes to the sidecar's HTTP relay, 443 to its TLS relay.
func (e *env) relayClient() *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			_, port, _ := net.SplitHostPort(addr)
			target := e.sc.HTTPAddr()
			if port == "443" {
				target = e.sc.HTTPSAddr()
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", target)
		},
		TLSClientConfig: &tls.Config{RootCAs: e.pool},
	}}
}

// proxyClient uses the sidecar's HTTP proxy (as with HTTP(S)_PROXY set).
func (e *env) proxyClient() *http.Client {
	pu := &url.URL{Scheme: "http", Host: e.sc.ProxyAddr()}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		Proxy:           http.ProxyURL(pu),
		TLSClientConfig: &tls.Config{RootCAs: e.pool},
	}}
}

// api calls the :18080 handler as a loopback client.
func (e *env) api(t *testing.T, method, path, body string, hdr ...string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://127.0.0.1:18080"+path, rd)
	req.RemoteAddr = "127.0.0.1:50000"
	req.Header.Set(AuthHeader, e.att.Token())
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "RemoteAddr" {
			req.RemoteAddr = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	e.att.Handler().ServeHTTP(w, req)
	return w
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}
