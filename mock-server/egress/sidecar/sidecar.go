// Package sidecar runs inside a sandbox's network namespace (started by the
// agent) and gives the sandbox a network made only of the host-side egress
// gateway: DNS on 127.0.0.1:53 answers from the gateway's decision, TCP
// relays on 127.0.0.1:80 and :443 forward each connection (named by its Host
// header or TLS SNI) through the gateway, and an HTTP proxy on :3128 serves
// programs that use HTTP(S)_PROXY. The sidecar decides nothing itself: the
// gateway (package egress) is the authority, so a program that bypasses the
// sidecar and talks to the gateway socket directly gains nothing.
package sidecar

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// Config says where the sidecar listens. Zero fields take the defaults the
// real sandbox uses; tests set "127.0.0.1:0" addresses to run unprivileged.
type Config struct {
	GatewaySocket string // default /run/osb/gateway.sock
	DNSAddr       string // default 127.0.0.1:53 (udp+tcp); "-" disables
	HTTPAddr      string // default 127.0.0.1:80 (relay for port 80); "-" disables
	HTTPSAddr     string // default 127.0.0.1:443 (relay for port 443); "-" disables
	ProxyAddr     string // default 127.0.0.1:3128 (HTTP proxy); "-" disables
	// ProxyToken, when set, is the password every proxy request must carry
	// (Proxy-Authorization: Basic, any user name); without it the proxy
	// answers 407. The bundled server sets it for the proxy it serves on
	// the host's loopback to a sandbox without a network namespace, where
	// any local process can connect to the proxy's port: the token (in the
	// sandbox's environment only) keeps one sandbox from using another's
	// policy. The in-namespace sidecar needs none.
	ProxyToken string
	// HTTPPort/HTTPSPort are the destination ports the relays stand for
	// (default 80 and 443), independent of where they listen.
	HTTPPort, HTTPSPort int
}

// DefaultGatewaySocket is where the runtime mounts the gateway socket.
const DefaultGatewaySocket = "/run/osb/gateway.sock"

func (c Config) withDefaults() Config {
	if c.GatewaySocket == "" {
		c.GatewaySocket = DefaultGatewaySocket
	}
	if c.DNSAddr == "" {
		c.DNSAddr = "127.0.0.1:53"
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = "127.0.0.1:80"
	}
	if c.HTTPSAddr == "" {
		c.HTTPSAddr = "127.0.0.1:443"
	}
	if c.ProxyAddr == "" {
		c.ProxyAddr = "127.0.0.1:3128"
	}
	if c.HTTPPort == 0 {
		c.HTTPPort = 80
	}
	if c.HTTPSPort == 0 {
		c.HTTPSPort = 443
	}
	return c
}

// Sidecar is a running sidecar.
type Sidecar struct {
	cfg    Config
	gw     *client
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	udp, tcp          *dns.Server
	httpLn, httpsLn   net.Listener
	proxyLn           net.Listener
	proxySrv          *http.Server
	dnsAddr, proxyAdr string
	closers           []func()
	closeOnce         sync.Once
}

// Run starts the sidecar with default addresses for gatewaySocket and blocks
// until ctx is done.
func Run(ctx context.Context, gatewaySocket string) error {
	return RunConfig(ctx, Config{GatewaySocket: gatewaySocket})
}

// RunConfig is Run with explicit addresses.
func RunConfig(ctx context.Context, cfg Config) error {
	s, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	<-ctx.Done()
	s.Close()
	return nil
}

// Start binds every listener and serves in the background. A bind failure
// closes whatever was bound and is returned.
func Start(ctx context.Context, cfg Config) (*Sidecar, error) {
	cfg = cfg.withDefaults()
	s := &Sidecar{cfg: cfg, gw: newClient(cfg.GatewaySocket)}
	s.ctx, s.cancel = context.WithCancel(ctx)
	var err error
	fail := func(what string, e error) (*Sidecar, error) {
		s.Close()
		return nil, fmt.Errorf("sidecar %s: %w", what, e)
	}
	if cfg.DNSAddr != "-" {
		s.udp, s.tcp, s.dnsAddr, err = startDNS(cfg.DNSAddr, &dnsHandler{gw: s.gw})
		if err != nil {
			return fail("dns "+cfg.DNSAddr, err)
		}
	}
	if cfg.HTTPAddr != "-" {
		if s.httpLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
			return fail("http relay "+cfg.HTTPAddr, err)
		}
	}
	if cfg.HTTPSAddr != "-" {
		if s.httpsLn, err = net.Listen("tcp", cfg.HTTPSAddr); err != nil {
			return fail("https relay "+cfg.HTTPSAddr, err)
		}
	}
	if cfg.ProxyAddr != "-" {
		if s.proxyLn, err = net.Listen("tcp", cfg.ProxyAddr); err != nil {
			return fail("proxy "+cfg.ProxyAddr, err)
		}
		s.proxySrv = &http.Server{Handler: newProxyHandler(s), ReadHeaderTimeout: 30 * time.Second}
		go func() { _ = s.proxySrv.Serve(s.proxyLn) }()
	}
	if s.httpLn != nil {
		go s.serveRelay(s.httpLn, cfg.HTTPPort, false)
	}
	if s.httpsLn != nil {
		go s.serveRelay(s.httpsLn, cfg.HTTPSPort, true)
	}
	go func() {
		<-s.ctx.Done()
		s.Close()
	}()
	return s, nil
}

// DNSAddr is the bound DNS address (udp and tcp; "" when disabled).
func (s *Sidecar) DNSAddr() string { return s.dnsAddr }

// HTTPAddr is the bound port-80 relay address ("" when disabled).
func (s *Sidecar) HTTPAddr() string { return lnAddr(s.httpLn) }

// HTTPSAddr is the bound port-443 relay address ("" when disabled).
func (s *Sidecar) HTTPSAddr() string { return lnAddr(s.httpsLn) }

func lnAddr(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// ProxyAddr is the bound proxy address ("" when disabled).
func (s *Sidecar) ProxyAddr() string { return lnAddr(s.proxyLn) }

// Close stops every listener. Open relays end when either side closes (the
// gateway closes its tunnels when the sandbox's attachment is closed).
func (s *Sidecar) Close() {
	s.closeOnce.Do(func() {
		s.cancel()
		if s.udp != nil {
			_ = s.udp.Shutdown()
		}
		if s.tcp != nil {
			_ = s.tcp.Shutdown()
		}
		for _, ln := range []net.Listener{s.httpLn, s.httpsLn} {
			if ln != nil {
				_ = ln.Close()
			}
		}
		if s.proxySrv != nil {
			_ = s.proxySrv.Close()
		} else if s.proxyLn != nil {
			_ = s.proxyLn.Close()
		}
		for _, c := range s.closers {
			c()
		}
	})
}
