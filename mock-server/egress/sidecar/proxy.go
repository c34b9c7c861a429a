package sidecar

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/internal/fullduplex"
)

// proxyHandler is an HTTP proxy for programs that use HTTP(S)_PROXY:
// CONNECT host:port tunnels and absolute-URI http:// requests, both through
// the gateway (phase "proxy").
type proxyHandler struct {
	s  *Sidecar
	rp *httputil.ReverseProxy
}

func newProxyHandler(s *Sidecar) *proxyHandler {
	h := &proxyHandler{s: s}
	tr := &http.Transport{
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, portStr, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			port, err := strconv.Atoi(portStr)
			if err != nil {
				return nil, err
			}
			return s.gw.connect(ctx, host, port, "proxy")
		},
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     30 * time.Second,
	}
	s.closers = append(s.closers, tr.CloseIdleConnections)
	h.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Proxy-Connection")
			pr.Out.Header.Del("Proxy-Authorization")
		},
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			status, msg := refusal(err)
			http.Error(w, msg, status)
		},
	}
	return h
}

func (h *proxyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if tok := h.s.cfg.ProxyToken; tok != "" {
		_, pass, ok := proxyCredentials(r.Header.Get("Proxy-Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(pass), []byte(tok)) != 1 {
			w.Header().Set("Proxy-Authenticate", `Basic realm="osb-egress"`)
			http.Error(w, "egress proxy: this proxy belongs to one sandbox; its credentials are in that sandbox's HTTP(S)_PROXY", http.StatusProxyAuthRequired)
			return
		}
	}
	if r.Method == http.MethodConnect {
		h.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "egress proxy: expected an absolute-URI request or CONNECT", http.StatusBadRequest)
		return
	}
	if r.URL.Scheme != "http" {
		http.Error(w, "egress proxy: only http:// absolute URIs; use CONNECT for https", http.StatusBadRequest)
		return
	}
	// Full duplex (internal/fullduplex): the upstream may answer before
	// it has the whole request body.
	defer fullduplex.Enable(w, r)()
	h.rp.ServeHTTP(w, r)
}

func (h *proxyHandler) connect(w http.ResponseWriter, r *http.Request) {
	host, portStr, err := net.SplitHostPort(r.Host)
	if err != nil {
		host, portStr = r.Host, "443"
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || host == "" {
		http.Error(w, "egress proxy: CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	up, err := h.s.gw.connect(ctx, host, port, "proxy")
	cancel()
	if err != nil {
		status, msg := refusal(err)
		http.Error(w, msg, status)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "egress proxy: cannot hijack", http.StatusInternalServerError)
		return
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		_ = c.Close()
		_ = up.Close()
		return
	}
	var client net.Conn = c
	if brw.Reader.Buffered() > 0 {
		client = &bufConn{Conn: c, r: brw.Reader}
	}
	relay(client, up)
}

// proxyCredentials parses a Proxy-Authorization: Basic header.
func proxyCredentials(h string) (user, pass string, ok bool) {
	scheme, enc, found := strings.Cut(strings.TrimSpace(h), " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return "", "", false
	}
	return strings.Cut(string(raw), ":")
}
