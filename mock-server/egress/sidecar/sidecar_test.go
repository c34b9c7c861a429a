package sidecar

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func startNoGateway(t *testing.T) *Sidecar {
	t.Helper()
	s, err := Start(context.Background(), Config{
		GatewaySocket: filepath.Join(t.TempDir(), "missing.sock"),
		DNSAddr:       "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", ProxyAddr: "127.0.0.1:0",
	})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func TestDNSServfailWhenGatewayUnreachable(t *testing.T) {
	s := startNoGateway(t)
	for _, netw := range []string{"udp", "tcp"} {
		m := new(dns.Msg)
		m.SetQuestion("pypi.org.", dns.TypeA)
		r, _, err := (&dns.Client{Net: netw}).Exchange(m, s.DNSAddr())
		require.NoError(t, err)
		assert.Equal(t, dns.RcodeServerFailure, r.Rcode, netw)
	}
}

func TestRelayAndProxyReportUnreachableGateway(t *testing.T) {
	s := startNoGateway(t)
	req, _ := http.NewRequest("GET", "http://"+s.HTTPAddr()+"/", nil)
	req.Host = "pypi.org"
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadGateway, resp.StatusCode)
}

func TestStartFailsCleanlyOnBusyAddress(t *testing.T) {
	s := startNoGateway(t)
	_, err := Start(context.Background(), Config{GatewaySocket: "/nonexistent", DNSAddr: "127.0.0.1:0", HTTPAddr: s.HTTPAddr(), HTTPSAddr: "127.0.0.1:0", ProxyAddr: "-"})
	assert.Error(t, err)
}

func TestRunStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunConfig(ctx, Config{GatewaySocket: "/nonexistent", DNSAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", HTTPSAddr: "127.0.0.1:0", ProxyAddr: "-"})
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("RunConfig did not return after cancel")
	}
}

// A proxy-only sidecar with a token (the bundled server's loopback proxy of
// a sandbox without a network namespace): no DNS or relays bound, and a
// request without the token's credentials never reaches the gateway (407);
// with them it does (here: no gateway, 502).
func TestProxyOnlyWithToken(t *testing.T) {
	s, err := Start(context.Background(), Config{GatewaySocket: filepath.Join(t.TempDir(), "missing.sock"),
		DNSAddr: "-", HTTPAddr: "-", HTTPSAddr: "-", ProxyAddr: "127.0.0.1:0", ProxyToken: "tok"})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	assert.Empty(t, s.DNSAddr())
	assert.Empty(t, s.HTTPAddr())
	assert.Empty(t, s.HTTPSAddr())
	for _, tc := range []struct {
		name, user string
		want       int
	}{{"none", "", http.StatusProxyAuthRequired}, {"wrong", "osb:nope", http.StatusProxyAuthRequired}, {"right", "osb:tok", http.StatusBadGateway}} {
		proxy := &url.URL{Scheme: "http", Host: s.ProxyAddr()}
		if u, p, ok := strings.Cut(tc.user, ":"); ok {
			proxy.User = url.UserPassword(u, p)
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}}
		resp, err := c.Get("http://pypi.org/simple/")
		require.NoError(t, err, tc.name)
		resp.Body.Close()
		assert.Equal(t, tc.want, resp.StatusCode, tc.name)
	}
}
