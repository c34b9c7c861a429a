package egress

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/osb-capstone/acceptance/mock-server/egress/sidecar"
)

// LoopbackNoProxy is the NO_PROXY a sandbox without a network namespace
// gets: its own loopback is not egress (in a namespace it is its own).
const LoopbackNoProxy = "localhost,127.0.0.1,::1"

// PublicCABundleName is the world-readable copy of the sandbox CA bundle in
// the hub's state directory, for sandboxes that run as plain processes
// (another uid than the server's) and so see the host's files, not the
// bundle mounted at SandboxCABundlePath.
const PublicCABundleName = "egress-ca-bundle.crt"

// LoopbackProxy gives a sandbox that has no network namespace (the bundled
// server's insecure mode: its processes share the host's network) a way to
// this attachment's gateway at the application layer: an HTTP proxy on the
// host's loopback (CONNECT and absolute http:// URIs, as the in-namespace
// sidecar's :3128), served by the server process, whose every tunnel is a
// CONNECT to the gateway socket (phase "proxy"): the gateway decides each
// host and each request inside the tunnel against the sandbox's current
// policy and the deny overrides, maps the stub host names (pypi.org, …) to
// their loopback upstreams, dials nothing else, and audits every decision,
// exactly as for a namespaced sandbox. A denied host is refused (403) and
// never dialled.
//
// It returns the environment that points clients at it: HTTP_PROXY and
// HTTPS_PROXY (both cases) with the proxy's per-sandbox credentials (any
// local process can connect to the port; without the token, which only
// this environment holds, it answers 407), NO_PROXY for loopback, and the
// CA variables at a world-readable copy of the sandbox CA bundle. What it
// does not do: stop a process that ignores the proxy variables from using
// the host's network directly. Egress is then enforced only for clients
// that honour them; the caller must say so (the server's /_mock/info
// "egress_enforcement": "proxy").
//
// Calling it again returns the same environment; Close stops the proxy.
func (a *Attachment) LoopbackProxy() (map[string]string, error) {
	a.proxyMu.Lock()
	defer a.proxyMu.Unlock()
	if a.proxyEnv != nil {
		return a.proxyEnv, nil
	}
	a.connMu.Lock()
	closed := a.closed
	a.connMu.Unlock()
	if closed {
		return nil, errors.New("egress: attachment closed")
	}
	bundle, err := a.hub.publicBundle()
	if err != nil {
		return nil, err
	}
	token := randomToken()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := sidecar.Start(ctx, sidecar.Config{GatewaySocket: a.sock, DNSAddr: "-", HTTPAddr: "-", HTTPSAddr: "-",
		ProxyAddr: "127.0.0.1:0", ProxyToken: token})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("egress: loopback proxy: %w", err)
	}
	a.proxy, a.proxyStop = p, cancel
	proxyURL := (&url.URL{Scheme: "http", User: url.UserPassword("osb", token), Host: p.ProxyAddr()}).String()
	env := map[string]string{
		"HTTP_PROXY": proxyURL, "HTTPS_PROXY": proxyURL, "http_proxy": proxyURL, "https_proxy": proxyURL,
		"NO_PROXY": LoopbackNoProxy, "no_proxy": LoopbackNoProxy,
	}
	for k := range a.SandboxEnv() {
		env[k] = bundle
	}
	a.proxyEnv = env
	return env, nil
}

// ProxyAddr is the loopback proxy's address ("" when LoopbackProxy was not
// called).
func (a *Attachment) ProxyAddr() string {
	a.proxyMu.Lock()
	defer a.proxyMu.Unlock()
	if a.proxy == nil {
		return ""
	}
	return a.proxy.ProxyAddr()
}

// stopProxy stops the loopback proxy (its open tunnels end when the
// gateway closes them).
func (a *Attachment) stopProxy() {
	a.proxyMu.Lock()
	defer a.proxyMu.Unlock()
	if a.proxy != nil {
		a.proxy.Close()
		a.proxyStop()
		a.proxy = nil
	}
}

// publicBundle writes (once) the world-readable copy of the sandbox CA
// bundle: <StateDir>/egress-ca-bundle.crt, 0644 (certificates only, no key).
func (h *Hub) publicBundle() (string, error) {
	h.publicOnce.Do(func() {
		b, err := os.ReadFile(h.bundle)
		if err == nil {
			p := filepath.Join(h.cfg.StateDir, PublicCABundleName)
			if err = os.WriteFile(p, b, 0o644); err == nil {
				err = os.Chmod(p, 0o644) // whatever the umask
			}
			h.public = p
		}
		h.publicErr = err
	})
	if h.publicErr != nil {
		return "", fmt.Errorf("egress: public CA bundle: %w", h.publicErr)
	}
	return h.public, nil
}
