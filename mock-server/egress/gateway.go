package egress

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/egress/sidecar"
)

// gatewayHandler serves the sidecar protocol (see package sidecar) on the
// sandbox's unix socket. Every answer is decided here, host-side.
func (a *Attachment) gatewayHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodConnect:
			a.handleConnect(w, r)
		case r.URL.Path == "/resolve" && r.Method == http.MethodGet:
			a.handleResolve(w, r)
		case r.URL.Path == "/healthz":
			_, _ = w.Write([]byte("ok"))
		default:
			http.Error(w, "unknown gateway request", http.StatusNotFound)
		}
	})
}

func (a *Attachment) handleResolve(w http.ResponseWriter, r *http.Request) {
	name := normalizeHost(r.URL.Query().Get("name"))
	if name == "" {
		http.Error(w, "missing name", http.StatusBadRequest)
		return
	}
	qtype := strings.ToUpper(r.URL.Query().Get("type"))
	note := ""
	if qtype != "" {
		note = "qtype=" + qtype
	}
	v := a.check("dns", name, 0, note)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(sidecar.ResolveResult{
		Name: name, Allowed: v.Allowed, Decision: v.Outcome, Rule: v.Rule,
	})
}

func (a *Attachment) handleConnect(w http.ResponseWriter, r *http.Request) {
	host, portStr, err := net.SplitHostPort(r.Host)
	port, perr := strconv.Atoi(portStr)
	if err != nil || perr != nil || port <= 0 || port > 65535 || normalizeHost(host) == "" {
		http.Error(w, "CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	phase := "connect"
	if r.Header.Get(sidecar.PhaseHeader) == "proxy" {
		phase = "proxy"
	}
	v := a.check(phase, host, port, "")
	if v.Outcome != "allow" {
		w.Header().Set(sidecar.DecisionHeader, v.Outcome)
		http.Error(w, v.Message, v.Status)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "gateway cannot hijack", http.StatusInternalServerError)
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return
	}
	_ = conn.SetDeadline(time.Time{})
	if _, err := conn.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		_ = conn.Close()
		return
	}
	var c net.Conn = conn
	if brw.Reader.Buffered() > 0 {
		c = &bufConn{Conn: conn, r: brw.Reader}
	}
	a.hub.fwd.serveTunnel(a, c, &tunnelMeta{att: a, host: normalizeHost(host), port: port, phase: phase, upstream: v.Upstream})
}

// bufConn reads through a bufio.Reader that may hold bytes already read.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }
