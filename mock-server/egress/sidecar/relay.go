package sidecar

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

const peekLimit = 64 << 10

// serveRelay accepts connections on ln and relays each through the gateway.
// port is the destination port the listener stands for (80 or 443); tlsMode
// selects SNI peeking instead of Host-header peeking.
func (s *Sidecar) serveRelay(ln net.Listener, port int, tlsMode bool) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			if tlsMode {
				s.relayTLS(c, port)
			} else {
				s.relayHTTP(c, port)
			}
		}()
	}
}

// relayHTTP peeks the request head for the Host header, opens a tunnel for
// it and replays the bytes. A refusal is answered as an HTTP error response
// whose text names the gateway's reason.
func (s *Sidecar) relayHTTP(c net.Conn, port int) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReaderSize(c, peekLimit)
	head, err := peekHead(br)
	if err != nil {
		writeHTTPError(c, http.StatusBadRequest, "egress relay: cannot read an HTTP request head: "+err.Error())
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
	host := ""
	if err == nil {
		host = req.Host
		if h, _, e := net.SplitHostPort(host); e == nil {
			host = h
		}
	}
	if host == "" {
		writeHTTPError(c, http.StatusBadRequest, "egress relay: request has no Host header")
		_ = c.Close()
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 15*time.Second)
	up, err := s.gw.connect(ctx, host, port, "connect")
	cancel()
	if err != nil {
		status, msg := refusal(err)
		writeHTTPError(c, status, msg)
		_ = c.Close()
		return
	}
	relay(&bufConn{Conn: c, r: br}, up)
}

// peekHead returns the bytes up to and including the blank line ending the
// request head, without consuming them.
func peekHead(br *bufio.Reader) ([]byte, error) {
	for {
		n := br.Buffered()
		buf, _ := br.Peek(n)
		if i := bytes.Index(buf, []byte("\r\n\r\n")); i >= 0 {
			return buf[:i+4], nil
		}
		if n >= peekLimit {
			return nil, errors.New("request head too large")
		}
		if _, err := br.Peek(n + 1); err != nil { // wait for more bytes
			return nil, err
		}
	}
}

// relayTLS peeks the ClientHello's SNI, opens a tunnel for it and replays
// the handshake bytes. Without SNI (e.g. a raw IP) the connection is closed.
func (s *Sidecar) relayTLS(c net.Conn, port int) {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	sni, hello, err := peekSNI(c)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil || sni == "" {
		_ = c.Close()
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, 15*time.Second)
	up, err := s.gw.connect(ctx, sni, port, "connect")
	cancel()
	if err != nil {
		_ = c.Close()
		return
	}
	relay(&bufConn{Conn: c, r: io.MultiReader(bytes.NewReader(hello), c)}, up)
}

var errHelloRead = errors.New("client hello read")

// peekSNI runs a server handshake only far enough to read the ClientHello,
// recording every byte read so it can be replayed.
func peekSNI(c net.Conn) (string, []byte, error) {
	var buf bytes.Buffer
	var sni string
	got := false
	err := tls.Server(readOnlyConn{r: io.TeeReader(c, &buf)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			sni, got = h.ServerName, true
			return nil, errHelloRead
		},
	}).Handshake()
	if !got {
		return "", nil, fmt.Errorf("no TLS ClientHello: %v", err)
	}
	return strings.ToLower(sni), buf.Bytes(), nil
}

type readOnlyConn struct{ r io.Reader }

func (c readOnlyConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c readOnlyConn) Write([]byte) (int, error)        { return 0, io.ErrClosedPipe }
func (c readOnlyConn) Close() error                     { return nil }
func (c readOnlyConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c readOnlyConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c readOnlyConn) SetDeadline(time.Time) error      { return nil }
func (c readOnlyConn) SetReadDeadline(time.Time) error  { return nil }
func (c readOnlyConn) SetWriteDeadline(time.Time) error { return nil }

// refusal maps a connect error to an HTTP status and a message that names a
// network-policy denial clearly.
func refusal(err error) (int, string) {
	var ge *GatewayError
	if errors.As(err, &ge) {
		return ge.Status, ge.Message
	}
	return http.StatusBadGateway, "egress relay: " + err.Error()
}

func writeHTTPError(w io.Writer, status int, msg string) {
	body := msg + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}
