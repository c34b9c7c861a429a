package dockertarget

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/osb-capstone/acceptance/harness/stubs"
)

// The stub CA is made once and reused (same certificate, key file 0600, the
// certificate alone next to it without the key); it certifies the index's
// names only, and its name constraints make a leaf for any other name fail
// verification even if its key signed one.
func TestStubCAOnceAndConstrained(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "stub-ca")
	ca, err := EnsureStubCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, err := EnsureStubCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Cert.Equal(ca.Cert) {
		t.Error("a second EnsureStubCA made another CA")
	}
	if st, err := os.Stat(filepath.Join(dir, "stub-ca.pem")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the CA's key file: %v %v, want mode 0600", st.Mode(), err)
	}
	crt, err := os.ReadFile(ca.CertPath)
	if err != nil || strings.Contains(string(crt), "PRIVATE KEY") || !strings.Contains(string(crt), "BEGIN CERTIFICATE") {
		t.Errorf("%s (what the image gets) must hold the certificate alone: %v\n%s", ca.CertPath, err, crt)
	}
	if !ca.Cert.IsCA || !ca.Cert.MaxPathLenZero || !ca.Cert.PermittedDNSDomainsCritical {
		t.Errorf("CA flags: IsCA %v MaxPathLenZero %v constraints critical %v", ca.Cert.IsCA, ca.Cert.MaxPathLenZero, ca.Cert.PermittedDNSDomainsCritical)
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	leaf, err := ca.Leaf([]string{"files.pythonhosted.org", "pypi.org"})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"pypi.org", "files.pythonhosted.org"} {
		if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: n, Roots: pool}); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := ca.Leaf([]string{"example.com"}); err == nil {
		t.Error("Leaf signed example.com")
	}
	// Signed by the key directly, past Leaf's check: the name constraints
	// still refuse it.
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), DNSNames: []string{"example.com"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := x509.ParseCertificate(der)
	if _, err := forged.Verify(x509.VerifyOptions{DNSName: "example.com", Roots: pool}); err == nil {
		t.Error("a leaf for example.com from the stub CA's key verifies: the name constraints do not hold")
	}
}

// The TLS front on a loopback address standing in for the bridge serves the
// stub package index as pypi.org and files.pythonhosted.org as pip would
// fetch it: the resolver answers both names with the front's address, the
// index page's link is https://files.pythonhosted.org/…, which comes back to
// the front, and the wheel arrives whole. A client trusting only the system
// roots refuses the front; a ClientHello for another name is refused in
// the handshake. Its INPUT exception is added with the others and removed
// with them.
func TestTLSFrontServesTheStubIndex(t *testing.T) {
	wheels := t.TempDir()
	wheel := []byte("PK\x03\x04 not really a wheel, bytes to hash")
	if err := os.WriteFile(filepath.Join(wheels, "tabulate-0.9.0-py3-none-any.whl"), wheel, 0o644); err != nil {
		t.Fatal(err)
	}
	idx, err := stubs.NewPackageIndex(wheels)
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	ca, err := EnsureStubCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	names := []string{stubs.PyPIHost, stubs.FilesHost}
	cert, err := ca.Leaf(names)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeIPTables{}
	addr := net.ParseIP("127.213.47.3")
	b := Bridge{Iface: "lo-test", Addr: addr, ipt: f}
	front := &TLSFront{Stubs: map[string]string{stubs.PyPIHost: idx.URL(), stubs.FilesHost: idx.URL()}, Cert: cert}
	s, err := StartBridgeServicesTLS(b, map[string]string{"data-api.capstone.test": "http://127.0.0.1:9"}, front)
	if err != nil {
		t.Skipf("not measured: cannot bind ports 53/80/443 on %s here: %v", addr, err)
	}
	defer s.Close()
	if len(f.rules) != 4 || !strings.Contains(f.rules[0], "--dport 443") || !strings.Contains(f.rules[0], "-d "+addr.String()+"/32") {
		t.Errorf("exceptions while running (want udp/53, tcp/53, tcp/80 and tcp/443 to %s): %q", addr, f.rules)
	}

	// The resolver: both index names, the bridge address.
	for _, n := range names {
		in, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(query(n, dns.TypeA), addr.String()+":53")
		if err != nil || len(in.Answer) != 1 || in.Answer[0].(*dns.A).A.String() != addr.String() {
			t.Errorf("%s: %v %v, want A %s", n, err, in, addr)
		}
	}
	in, _, err := (&dns.Client{Timeout: 3 * time.Second}).Exchange(query("example.com", dns.TypeA), addr.String()+":53")
	if err != nil || in.Rcode != dns.RcodeRefused {
		t.Errorf("example.com: %v %v, want REFUSED", err, in)
	}

	// Every name dials the front: no name is looked up anywhere else.
	dialed := []string{}
	dialFront := func(ctx context.Context, network, a string) (net.Conn, error) {
		dialed = append(dialed, a)
		return (&net.Dialer{}).DialContext(ctx, "tcp4", net.JoinHostPort(addr.String(), "443"))
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: dialFront,
		TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://pypi.org/simple/tabulate/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(wheel)
	link := regexp.MustCompile(`href="([^"#]+)#sha256=([0-9a-f]+)"`).FindStringSubmatch(string(page))
	if resp.StatusCode != 200 || link == nil || link[1] != "https://files.pythonhosted.org/packages/tabulate-0.9.0-py3-none-any.whl" || link[2] != hex.EncodeToString(sum[:]) {
		t.Fatalf("the index page: %d %v\n%s", resp.StatusCode, link, page)
	}
	resp, err = client.Get(link[1])
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != string(wheel) {
		t.Errorf("the wheel through the front: %d, %d bytes, want %d", resp.StatusCode, len(got), len(wheel))
	}
	for _, d := range dialed {
		if h, _, _ := net.SplitHostPort(d); h != "pypi.org" && h != "files.pythonhosted.org" {
			t.Errorf("dialled %s", d)
		}
	}
	var hosts []string
	for _, r := range idx.Requests() {
		hosts = append(hosts, r.Host+r.Path)
		if r.ForwardedFor != "127.0.0.1" {
			t.Errorf("the index saw X-Forwarded-For %q, want the client's address", r.ForwardedFor)
		}
	}
	if len(hosts) != 2 || hosts[0] != "pypi.org/simple/tabulate/" || hosts[1] != "files.pythonhosted.org/packages/tabulate-0.9.0-py3-none-any.whl" {
		t.Errorf("the index's log: %q", hosts)
	}

	// A client with the system roots only (an image that does not trust the
	// stub CA) refuses the front's certificate.
	sys := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DialContext: dialFront}}
	if resp, err := sys.Get("https://pypi.org/simple/"); err == nil {
		resp.Body.Close()
		t.Error("a client without the stub CA accepted the front's certificate")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the stub CA: %v, want a certificate error", err)
	}
	// Another name in the ClientHello: refused in the handshake.
	c, err := tls.Dial("tcp4", net.JoinHostPort(addr.String(), "443"), &tls.Config{ServerName: "example.com", RootCAs: pool})
	if err == nil {
		c.Close()
		t.Error("the front completed a handshake for example.com")
	}
	// Bound to the bridge address itself.
	if s.https == nil {
		t.Fatal("no TLS front")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.rules) != 0 {
		t.Errorf("exceptions after Close: %q", f.rules)
	}
	if c, err := net.DialTimeout("tcp4", net.JoinHostPort(addr.String(), "443"), time.Second); err == nil {
		c.Close()
		t.Error("the TLS front still accepts after Close")
	}
}

// A TLS front whose stubs are not loopback http URLs, or whose certificate
// does not name them, is refused before anything is bound or opened.
func TestTLSFrontRefusesBadStubs(t *testing.T) {
	ca, err := EnsureStubCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Leaf([]string{"pypi.org"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeIPTables{}
	b := Bridge{Iface: "lo-test", Addr: net.ParseIP("127.213.47.4"), ipt: f}
	for _, front := range []*TLSFront{
		{Stubs: map[string]string{"pypi.org": "http://10.0.0.1:80"}, Cert: cert},
		{Stubs: map[string]string{"pypi.org": "https://127.0.0.1:1"}, Cert: cert},
		{Stubs: map[string]string{"files.pythonhosted.org": "http://127.0.0.1:1"}, Cert: cert}, // not in the certificate
		{Stubs: map[string]string{"pypi.org": "http://127.0.0.1:1"}},                           // no certificate
	} {
		if s, err := StartBridgeServicesTLS(b, nil, front); err == nil {
			s.Close()
			t.Errorf("front %v accepted", front.Stubs)
		}
	}
	if len(f.calls) != 0 {
		t.Errorf("iptables touched: %q", f.calls)
	}
}

// An INPUT exception for the TLS front that cannot be added undoes the
// others and frees the ports: nothing is left open.
func TestTLSFrontRuleFailureRollsBack(t *testing.T) {
	ca, err := EnsureStubCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Leaf([]string{"pypi.org"})
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeIPTables{fail: "--dport 443"}
	addr := net.ParseIP("127.213.47.5")
	b := Bridge{Iface: "lo-test", Addr: addr, ipt: f}
	front := &TLSFront{Stubs: map[string]string{"pypi.org": "http://127.0.0.1:1"}, Cert: cert}
	if s, err := StartBridgeServicesTLS(b, nil, front); err == nil {
		s.Close()
		t.Fatal("started without its INPUT exception")
	} else if strings.Contains(err.Error(), "cannot bind") || strings.Contains(err.Error(), "address already in use") {
		t.Skipf("not measured: %v", err)
	}
	if len(f.rules) != 0 {
		t.Errorf("exceptions left: %q", f.rules)
	}
	for _, port := range []string{"443", "80", "53"} {
		l, err := net.Listen("tcp4", net.JoinHostPort(addr.String(), port))
		if err != nil {
			t.Errorf("port %s still held after the failed start: %v", port, err)
			continue
		}
		l.Close()
	}
}
