package standin

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/egress"
)

// tlsPassthrough is the port-443 side of the stand-in's credential proxy.
// With credentialProxy the stand-in answers every allowed name with
// 127.0.0.1 (upstream.go), as the real sidecar's transparent mitmproxy takes
// ports 80 and 443; the stand-in intercepts no TLS, so on 443 it only relays:
// it reads the ClientHello's server name, checks it against the current
// policy, and splices the connection to port 443 of the address the upstream
// resolver gave for that name (on the docker target: the harness's TLS front
// on the bridge, which serves the stub package index). No vault credential
// is injected over TLS (docs/docker.md): the data API is served over http.
type tlsPassthrough struct {
	att  *egress.Attachment
	mem  *resolved
	port string // the upstream port ("": 443; a test's server)
	dial func(network, addr string) (net.Conn, error)
}

// serve accepts on l until it is closed.
func (p tlsPassthrough) serve(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go p.relay(c)
	}
}

func (p tlsPassthrough) relay(c net.Conn) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	name, head, err := readServerName(c)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil || name == "" {
		logf("egress: credential proxy :443: no server name in the ClientHello (%v); closed", err)
		return
	}
	host := strings.ToLower(strings.TrimSuffix(name, "."))
	if !p.att.Policy().Evaluate(host).Allowed {
		logf("egress: credential proxy :443: %s denied by policy; closed", host)
		return
	}
	ips := p.mem.get(host)
	if len(ips) == 0 {
		logf("egress: credential proxy :443: no upstream address for %s (it was not resolved through the stand-in); closed", host)
		return
	}
	port := p.port
	if port == "" {
		port = "443"
	}
	dial := p.dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 10 * time.Second}).Dial
	}
	up, err := dial("tcp", net.JoinHostPort(ips[0].String(), port))
	if err != nil {
		logf("egress: credential proxy :443: %s: %v", host, err)
		return
	}
	defer up.Close()
	if _, err := up.Write(head); err != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = io.Copy(up, c)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}()
	_, _ = io.Copy(c, up)
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	wg.Wait()
}

// errHelloRead stops the handshake once the ClientHello is read.
var errHelloRead = errors.New("client hello read")

// readServerName reads the TLS ClientHello from c and returns its server
// name and every byte read (to replay to the upstream). Nothing is written to c.
func readServerName(c net.Conn) (string, []byte, error) {
	var buf bytes.Buffer
	var name string
	srv := tls.Server(readOnlyConn{r: io.TeeReader(c, &buf), Conn: c}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			name = h.ServerName
			return nil, errHelloRead
		},
	})
	err := srv.Handshake()
	if name != "" {
		err = nil
	}
	return name, buf.Bytes(), err
}

// readOnlyConn lets crypto/tls read a ClientHello and write nothing.
type readOnlyConn struct {
	r io.Reader
	net.Conn
}

func (c readOnlyConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c readOnlyConn) Write(p []byte) (int, error) { return 0, io.ErrClosedPipe }
func (c readOnlyConn) Close() error                { return nil }
