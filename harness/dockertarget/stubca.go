package dockertarget

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The stub CA: the docker target serves the run's stub package index to its
// sandboxes as https://pypi.org and https://files.pythonhosted.org on the
// engine's bridge (BridgeServices' TLS front, bridge_tls.go). pip checks the
// server's certificate, so the suite's own sandbox image trusts one CA made on
// this machine for that alone:
//
//   - generated once per machine, with the engine's run state
//     (<OSB_DOCKER_TARGET_STATE, default /var/lib/osb-acceptance/target>/stub-ca/
//     stub-ca.pem: the certificate and its ECDSA P-256 key, mode 0600), and
//     reused by every run of every checkout (so all build the same sandbox
//     image, and a fresh clone finds it in the engine); its certificate alone is written
//     next to it (stub-ca.crt), and that file is what the sandbox image's build
//     installs into the image's trust store (.ci/docker-sandbox-rootfs.sh) and
//     what the image's cache key hashes. The key never enters an image;
//   - name-constrained to the index's names (StubCANames): even a leaked key
//     signs nothing another name would accept;
//   - each run signs a short-lived leaf for the index names in memory (Leaf).

// StubCANames are the names the stub CA may certify (its name constraints:
// each name and its subdomains).
var StubCANames = []string{"pypi.org", "files.pythonhosted.org"}

// StubCA is the machine's stub CA.
type StubCA struct {
	Cert     *x509.Certificate
	CertPEM  []byte
	CertPath string // the certificate alone (PEM), for the image build
	key      crypto.Signer
}

// stubCAValidity is how long the CA is valid (it lives in a cache: a new one
// means a new sandbox image, a few minutes).
const stubCAValidity = 10 * 365 * 24 * time.Hour

// EnsureStubCA loads the stub CA from dir, making it first when there is
// none. Two runs making it at once agree: the file is linked into place (the
// first wins) and both read the winner.
func EnsureStubCA(dir string) (*StubCA, error) {
	path := filepath.Join(dir, "stub-ca.pem")
	if ca, err := loadStubCA(path); err == nil {
		return ca, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("the stub CA %s: %w (remove the directory to make a new one; the sandbox image is rebuilt for it)", path, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	b, err := newStubCAPEM(time.Now())
	if err != nil {
		return nil, err
	}
	tmp, err := os.CreateTemp(dir, ".stub-ca-*.pem")
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return nil, err
	}
	if err := tmp.Close(); err != nil {
		return nil, err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	return loadStubCA(path)
}

// newStubCAPEM makes a CA: its certificate and key, PEM.
func newStubCAPEM(now time.Time) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	tmpl := &x509.Certificate{
		SerialNumber:                serial,
		Subject:                     pkix.Name{CommonName: "osb-acceptance stub package index CA (" + host + ", this machine's docker target only)"},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(stubCAValidity),
		IsCA:                        true,
		BasicConstraintsValid:       true,
		MaxPathLenZero:              true,
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		PermittedDNSDomainsCritical: true,
		PermittedDNSDomains:         StubCANames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: der})
	_ = pem.Encode(&buf, &pem.Block{Type: "PRIVATE KEY", Bytes: kder})
	return buf.Bytes(), nil
}

// loadStubCA reads the CA and (re)writes its certificate alone next to it.
func loadStubCA(path string) (*StubCA, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ca := &StubCA{CertPath: strings.TrimSuffix(path, ".pem") + ".crt"}
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		switch blk.Type {
		case "CERTIFICATE":
			if ca.Cert, err = x509.ParseCertificate(blk.Bytes); err != nil {
				return nil, err
			}
			ca.CertPEM = pem.EncodeToMemory(blk)
		case "PRIVATE KEY":
			k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
			if err != nil {
				return nil, err
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, errors.New("the key cannot sign")
			}
			ca.key = s
		}
	}
	if ca.Cert == nil || ca.key == nil {
		return nil, errors.New("want a CERTIFICATE and a PRIVATE KEY block")
	}
	if !ca.Cert.IsCA || time.Now().After(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("not a CA certificate valid now (until %s)", ca.Cert.NotAfter.Format(time.DateOnly))
	}
	if cur, err := os.ReadFile(ca.CertPath); err != nil || !bytes.Equal(cur, ca.CertPEM) {
		if err := os.WriteFile(ca.CertPath, ca.CertPEM, 0o644); err != nil {
			return nil, err
		}
	}
	return ca, nil
}

// Leaf signs a certificate for names (each must be one of StubCANames or
// under one), valid for two days, with a fresh key held in memory only.
func (ca *StubCA) Leaf(names []string) (tls.Certificate, error) {
	for _, n := range names {
		if !underStubCANames(n) {
			return tls.Certificate{}, fmt.Errorf("the stub CA certifies %s only, not %q", strings.Join(StubCANames, ", "), n)
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return tls.Certificate{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: names[0]},
		DNSNames:     names,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(48 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der, ca.Cert.Raw}, PrivateKey: key, Leaf: leaf}, nil
}

func underStubCANames(name string) bool {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	for _, d := range StubCANames {
		if name == d || strings.HasSuffix(name, "."+d) {
			return true
		}
	}
	return false
}
