package dockertarget

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The TLS front (docs/docker.md, "The vault on the docker target", and "D1 on
// the docker target"): the stubs a sandbox asks for over HTTPS — the run's
// stub package index as pypi.org and files.pythonhosted.org, which pip only
// speaks HTTPS to — on <bridge address>:443, forwarding by Host to the stub's
// loopback server as the plain front on :80 does (stubFront; the stub sees
// X-Forwarded-Proto https, so the index's file links are
// https://files.pythonhosted.org/…, which come back here). Its certificate is
// a leaf of the machine's stub CA (stubca.go), which the suite's own sandbox
// image trusts and no other image does. A ClientHello naming no served name
// (or none) is refused in the handshake: the front answers those names only.

// TLSFront is what the front on :443 serves.
type TLSFront struct {
	// Stubs maps each name to its stub's loopback URL (http://127.0.0.1:port).
	Stubs map[string]string
	// Cert is the front's certificate (StubCA.Leaf for the names).
	Cert tls.Certificate
}

// targets checks the stubs' URLs (loopback http only) and keys them by the
// name in lower case; nil for a nil front.
func (f *TLSFront) targets() (map[string]*url.URL, error) {
	if f == nil || len(f.Stubs) == 0 {
		return nil, nil
	}
	if len(f.Cert.Certificate) == 0 {
		return nil, errors.New("the TLS front has no certificate")
	}
	out := map[string]*url.URL{}
	for name, raw := range f.Stubs {
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return nil, fmt.Errorf("stub %s: want http://127.0.0.1:port, got %q", name, raw)
		}
		if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
			return nil, fmt.Errorf("stub %s: %q is not a loopback URL", name, raw)
		}
		n := strings.ToLower(strings.TrimSuffix(name, "."))
		if f.Cert.Leaf != nil && f.Cert.Leaf.VerifyHostname(n) != nil {
			return nil, fmt.Errorf("stub %s: the TLS front's certificate does not name it", name)
		}
		out[n] = u
	}
	return out, nil
}

// listen binds <host>:443.
func (f *TLSFront) listen(host string) (net.Listener, error) {
	l, err := net.Listen("tcp4", net.JoinHostPort(host, "443"))
	if err != nil {
		return nil, fmt.Errorf("the stubs' TLS front on %s:443: %w (is another docker-target run using this engine outside its lock?)", host, err)
	}
	return l, nil
}

// server is the front's HTTPS server: the certificate for a served name only.
func (f *TLSFront) server(targets map[string]*url.URL) *http.Server {
	cert := f.Cert
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			name := strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))
			if _, ok := targets[name]; !ok {
				return nil, fmt.Errorf("no stub serves %q over TLS here", hello.ServerName)
			}
			return &cert, nil
		},
	}
	// A refused handshake (a name not served) is the client's to report; the
	// run's log stays quiet.
	return &http.Server{Handler: stubFront(targets), TLSConfig: cfg, ReadHeaderTimeout: 30 * time.Second,
		ErrorLog: log.New(io.Discard, "", 0)}
}

// tlsRule is the INPUT exception for the TLS front (the vault rules' mark, so
// removeVaultRules removes it with them).
func tlsRule(iface string, addr net.IP) []string {
	return []string{"-i", iface, "-d", addr.String() + "/32", "-p", "tcp", "-m", "tcp", "--dport", "443",
		"-m", "comment", "--comment", vaultRuleComment, "-j", "ACCEPT"}
}

// addTLSRule inserts the TLS front's exception first in INPUT.
func addTLSRule(ipt iptables, iface string, addr net.IP) error {
	return ipt.run(append([]string{"-w", "-I", "INPUT", "1"}, tlsRule(iface, addr)...)...)
}
