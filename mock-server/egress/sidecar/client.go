package sidecar

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// GatewayError is a refusal from the gateway (denied, no upstream, bad request).
type GatewayError struct {
	Status   int
	Decision string // deny | error (from the DecisionHeader)
	Message  string
}

func (e *GatewayError) Error() string {
	return fmt.Sprintf("egress gateway %d: %s", e.Status, e.Message)
}

// client talks to the host-side gateway over its unix socket.
type client struct {
	socket string
	http   *http.Client
}

func newClient(socket string) *client {
	dial := func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}
	return &client{socket: socket, http: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{Proxy: nil, DialContext: dial, MaxIdleConns: 4, IdleConnTimeout: 30 * time.Second},
	}}
}

// resolve asks whether name may be resolved.
func (c *client) resolve(ctx context.Context, name, qtype string) (ResolveResult, error) {
	q := url.Values{"name": {name}, "type": {qtype}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://gateway/resolve?"+q.Encode(), nil)
	if err != nil {
		return ResolveResult{}, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return ResolveResult{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return ResolveResult{}, &GatewayError{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
	}
	var rr ResolveResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&rr); err != nil {
		return ResolveResult{}, fmt.Errorf("gateway resolve answer: %w", err)
	}
	return rr, nil
}

// connect opens a tunnel to host:port through the gateway. phase is
// "connect" (transparent relay) or "proxy" (the HTTP proxy).
func (c *client) connect(ctx context.Context, host string, port int, phase string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.socket)
	if err != nil {
		return nil, fmt.Errorf("egress gateway unreachable: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	}
	authority := net.JoinHostPort(host, fmt.Sprint(port))
	req := &http.Request{
		Method: http.MethodConnect,
		URL:    &url.URL{Opaque: authority},
		Host:   authority,
		Header: http.Header{PhaseHeader: {phase}},
	}
	if err := req.Write(conn); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("egress gateway: %w", err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("egress gateway: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		_ = resp.Body.Close()
		_ = conn.Close()
		return nil, &GatewayError{Status: resp.StatusCode, Decision: resp.Header.Get(DecisionHeader), Message: strings.TrimSpace(string(b))}
	}
	_ = conn.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		return &bufConn{Conn: conn, r: br}, nil
	}
	return conn, nil
}

type bufConn struct {
	net.Conn
	r io.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// relay copies both ways until both directions are done.
func relay(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	_ = a.Close()
	_ = b.Close()
}

// CloseWrite half-closes the underlying connection when it can.
func (c *bufConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}
