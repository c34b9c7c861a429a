package mockserver

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"github.com/osb-capstone/acceptance/internal/fullduplex"
)

// handleServerProxy is /{,v1/}sandboxes/{id}/proxy/{port}[/{path}] (CONTRACT
// §1.11): no API key, credentials stripped, streamed both ways.
func (s *Server) handleServerProxy(w http.ResponseWriter, r *http.Request) {
	// Routing (405) comes before the path parameters are validated (422).
	// The real Allow lists the same five methods in a Python set's order,
	// which varies from process to process.
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch:
	default:
		methodNotAllowed("GET, POST, PUT, DELETE, PATCH")(w, r)
		return
	}
	id := r.PathValue("id")
	portStr := r.PathValue("port")
	port, err := strconv.Atoi(portStr)
	if err != nil {
		writeValidation(w, vIntParse([]any{"path", "port"}, portStr))
		return
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		writeError(w, http.StatusBadRequest, "GENERAL::UNKNOWN_ERROR", "WebSocket upgrade is not supported on the HTTP proxy route.")
		return
	}
	sb := s.lookupFor(r, id)
	if sb == nil {
		notFound(w, id)
		return
	}
	if port < 1 || port > 65535 {
		writeError(w, http.StatusBadRequest, "DOCKER::INVALID_PORT", fmt.Sprintf("Port %d is out of range (1-65535).", port))
		return
	}
	s.renewOnAccess(r, sb)
	rest := r.PathValue("path")
	target := "/" + rest
	if port != execdPort {
		target = fmt.Sprintf("/proxy/%d/%s", port, rest)
	}
	backend := &url.URL{Scheme: "http", Host: sb.execd.Addr()}
	// The sandbox's execd access token (when it has one) is merged into the
	// forwarded request for its owner only: a caller whose API key the
	// server accepts and that sees the sandbox, the one its endpoint
	// responses give the token to. Anyone else (this route needs no key) is
	// treated as 1.1.1 treats its other auth headers here
	// (OPENSANDBOX-EGRESS-AUTH, OpenSandbox-Secure-Access): not merged, the
	// caller sends it itself, and execd answers its 401 without it. The
	// SDKs send every endpoint header, so they work either way.
	token := ""
	if sb.execd.token != "" && s.proxyCallerOwns(r) {
		token = sb.execd.token
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = backend.Scheme
			pr.Out.URL.Host = backend.Host
			pr.Out.URL.Path = target
			pr.Out.URL.RawPath = ""
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.Out.Host = backend.Host
			for _, h := range []string{headerAPIKey, "Authorization", "Cookie"} {
				pr.Out.Header.Del(h)
			}
			if token != "" {
				pr.Out.Header.Set(headerExecdToken, token)
			}
			pr.SetXForwarded()
			for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v := pr.In.Header.Get(h); v != "" {
					pr.Out.Header.Set(h, v) // add only when absent
				}
			}
		},
		FlushInterval: -1,
		ErrorLog:      sb.execd.cutLog(), // quiet about streams the sandbox's removal cuts
		ModifyResponse: func(resp *http.Response) error {
			if resp.StatusCode == http.StatusBadGateway && s.lookup(id) != sb {
				_ = resp.Body.Close()
				return errGone
			}
			if resp.StatusCode == http.StatusBadGateway {
				_ = resp.Body.Close()
				return errBackend
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if s.lookup(id) != sb {
				// Removed while the call was on its way: as for an
				// unknown sandbox, never the 502 of a dead backend.
				notFound(w, id)
				return
			}
			writeError(w, http.StatusBadGateway, "GENERAL::UNKNOWN_ERROR",
				fmt.Sprintf("Could not connect to the backend sandbox %s on port %d: %v", id, port, err))
		},
	}
	// Full duplex (internal/fullduplex): the backend may start its answer
	// (a command's output streams at once) before it has the whole body.
	defer fullduplex.Enable(w, r)()
	held := &heldAnswer{w: w, header: http.Header{}}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler && !held.committed && s.lookup(id) != sb {
				notFound(w, id)
				return
			}
			panic(v)
		}
	}()
	rp.ServeHTTP(held, r)
	held.commit()
}

// proxyCallerOwns says whether a server-proxy request (a route without
// auth) carries an API key the server accepts, or the server needs none;
// lookupFor has already answered a sandbox another tenant's key does not
// see as unknown.
func (s *Server) proxyCallerOwns(r *http.Request) bool {
	off, _ := s.keyOK("")
	if off {
		return true
	}
	key := r.Header.Get(headerAPIKey)
	if key == "" {
		return false
	}
	_, ok := s.keyOK(key)
	return ok
}

// heldAnswer holds a proxied answer's status and headers until the first
// body byte or flush (then commit passes them on).
type heldAnswer struct {
	w         http.ResponseWriter
	header    http.Header
	status    int
	committed bool
}

func (h *heldAnswer) Header() http.Header { return h.header }

func (h *heldAnswer) WriteHeader(code int) {
	if h.committed {
		return
	}
	if informational(code) { // an interim answer goes out as it comes
		copyHeader(h.w.Header(), h.header)
		h.w.WriteHeader(code)
		return
	}
	if h.status == 0 {
		h.status = code
	}
}

func (h *heldAnswer) commit() {
	if h.committed {
		return
	}
	h.committed = true
	copyHeader(h.w.Header(), h.header)
	if h.status == 0 {
		h.status = http.StatusOK
	}
	h.w.WriteHeader(h.status)
}

func (h *heldAnswer) Write(b []byte) (int, error) {
	h.commit()
	return h.w.Write(b)
}

func (h *heldAnswer) Flush() {
	h.commit()
	if f, ok := h.w.(http.Flusher); ok {
		f.Flush()
	}
}

func (h *heldAnswer) Unwrap() http.ResponseWriter { return h.w }

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = v
	}
}

var (
	errBackend = errors.New("backend answered 502 (nothing listening on that port in the sandbox)")
	errGone    = errors.New("the sandbox was removed")
)
