package mockserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

const (
	headerAPIKey     = "OPEN-SANDBOX-API-KEY"
	headerRequestID  = "X-Request-ID"
	headerAdminToken = "X-Mock-Admin-Token"
	maxBodyBytes     = 8 << 20
)

var (
	proxyExemptRe = regexp.MustCompile(`^(/v1)?/sandboxes/[^/]+/proxy/\d+(/|$)`)
	sandboxPathRe = regexp.MustCompile(`^(?:/v1)?/sandboxes/([^/]+)`)
)

// buildHandler wires middleware (outermost first): panic guard, request id,
// CORS, then either the admin API or audit → auth → routes.
func (s *Server) buildHandler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	admin := s.adminHandler()
	api := s.auditLifecycle(s.auth(starletteRouting(mux)))
	return s.recoverer(s.requestID(s.cors(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_mock" || strings.HasPrefix(r.URL.Path, "/_mock/") {
			admin.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	}))))
}

func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "healthy"})
	})
	mux.HandleFunc("/health", methodNotAllowed(http.MethodGet))
	mux.HandleFunc("HEAD /health", methodNotAllowed(http.MethodGet))
	// FastAPI answers a method no route of the path takes with 405, allowing
	// the methods of the path's first route (the routes are declared here in
	// the real server's order); and unlike Go's mux, a GET route does not
	// take HEAD.
	first := map[string]string{}
	handleUnder := func(prefixes []string, method, path string, h http.HandlerFunc) {
		for _, p := range prefixes {
			pat := p + path
			if method != "" {
				mux.HandleFunc(method+" "+pat, h)
			} else {
				mux.HandleFunc(pat, h)
			}
			if method == "" {
				continue
			}
			if first[pat] == "" {
				first[pat] = method
				mux.HandleFunc(pat, methodNotAllowed(method))
			}
			if method == http.MethodGet {
				mux.HandleFunc("HEAD "+pat, methodNotAllowed(first[pat]))
			}
		}
	}
	handle := func(method, path string, h http.HandlerFunc) {
		handleUnder([]string{"/v1", ""}, method, path, h)
	}
	handle("POST", "/sandboxes", jsonBody(s.handleCreate))
	handle("GET", "/sandboxes", s.handleList)
	// A sandbox removed while one of its calls runs: that call answers 404
	// as for an unknown sandbox (answersGone, removal.go; the proxy route
	// and DELETE see to it themselves).
	handle("GET", "/sandboxes/{id}", s.answersGone(s.handleGet))
	handle("DELETE", "/sandboxes/{id}", s.handleDelete)
	handle("PATCH", "/sandboxes/{id}/metadata", jsonBody(s.answersGone(s.handlePatchMetadata)))
	handle("POST", "/sandboxes/{id}/pause", s.answersGone(s.handlePause))
	handle("POST", "/sandboxes/{id}/resume", s.answersGone(s.handleResume))
	handle("POST", "/sandboxes/{id}/renew-expiration", jsonBody(s.answersGone(s.handleRenew)))
	handle("GET", "/sandboxes/{id}/endpoints/{port}", s.answersGone(s.handleEndpoint))
	handle("", "/sandboxes/{id}/proxy/{port}", s.handleServerProxy)
	handle("", "/sandboxes/{id}/proxy/{port}/{path...}", s.handleServerProxy)
	handle("GET", "/sandboxes/{id}/diagnostics/{kind}", s.answersGone(s.handleDiagnostics))
	handle("POST", "/sandboxes/{id}/snapshots", s.answersGoneUnlessAccepted(s.handleSnapshots))
	handle("GET", "/snapshots", s.handleSnapshots)
	handle("GET", "/snapshots/{sid}", s.handleSnapshots)
	handle("DELETE", "/snapshots/{sid}", s.handleSnapshots)
	handle("", "/pools", s.handlePools)
	handle("", "/pools/{name}", s.handlePools)
	// The real server includes its metrics router under /v1 only.
	handleUnder([]string{"/v1"}, "POST", "/metrics/events", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, maxBodyBytes))
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	})
}

// methodNotAllowed is Starlette's answer to a path whose routes do not take
// the method: 405, Allow naming the methods of the path's first route (the
// real server registers one method per route), FastAPI's JSON body (a HEAD
// answer carries its headers only).
func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
	}
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic in handler", "path", r.URL.Path, "panic", fmt.Sprint(v))
				writeError(w, http.StatusInternalServerError, "GENERAL::UNKNOWN_ERROR", "internal server error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// requestID echoes a trimmed incoming X-Request-ID or generates uuid4().hex.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimSpace(r.Header.Get(headerRequestID))
		if id == "" {
			id = newRequestID()
		}
		r.Header.Set(headerRequestID, id)
		w.Header().Set(headerRequestID, id)
		next.ServeHTTP(w, r)
	})
}

// cors allows every origin, method and header with credentials, like the
// real server's CORSMiddleware; preflights are answered directly.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Set("Access-Control-Allow-Credentials", "true")
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT")
			if rh := r.Header.Get("Access-Control-Request-Headers"); rh != "" {
				h.Set("Access-Control-Allow-Headers", rh)
			}
			h.Set("Access-Control-Max-Age", "600")
			h.Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("OK"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authExempt mirrors srv/middleware/auth.py.
func authExempt(r *http.Request) bool {
	p := r.URL.Path
	if strings.Contains(p, "..") || strings.Contains(r.URL.RawPath, "..") {
		return false
	}
	for _, pre := range []string{"/health", "/docs", "/redoc", "/openapi.json"} {
		if strings.HasPrefix(p, pre) {
			return true
		}
	}
	return proxyExemptRe.MatchString(p)
}

func (s *Server) auth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(headerAPIKey)
		if off, _ := s.keyOK(""); off || authExempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		if key == "" {
			writeError(w, http.StatusUnauthorized, "MISSING_API_KEY",
				"Authentication credentials are missing. Provide API key via OPEN-SANDBOX-API-KEY header.")
			return
		}
		if _, ok := s.keyOK(key); !ok {
			writeError(w, http.StatusUnauthorized, "INVALID_API_KEY",
				"Authentication credentials are invalid. Check your API key and try again.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// auditLifecycle records every lifecycle API call (not /health). Bodies of
// create, renew and patch calls are kept with env values fingerprinted.
func (s *Server) auditLifecycle(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		var body []byte
		if keepBody(r) {
			b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
			_ = r.Body.Close()
			if err != nil {
				writeError(w, http.StatusBadRequest, "SANDBOX::INVALID_PARAMETER", "could not read request body: "+err.Error())
				return
			}
			if len(b) > maxBodyBytes {
				writeError(w, http.StatusRequestEntityTooLarge, "SANDBOX::INVALID_PARAMETER", "request body larger than 8 MiB")
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			body = b
		}
		rec := &wire.StatusRecorder{ResponseWriter: w}
		created := new(string)
		r = r.WithContext(context.WithValue(r.Context(), createdIDKey{}, created))
		next.ServeHTTP(rec, r)
		ev := wire.Lifecycle{
			Method:    r.Method,
			Path:      r.URL.Path,
			Status:    rec.Code(),
			RequestID: w.Header().Get(headerRequestID),
		}
		if k := r.Header.Get(headerAPIKey); k != "" {
			ev.KeyFingerprint = Fingerprint(k)
		}
		if body != nil {
			ev.Body = redactBody(body)
		}
		id := ""
		if m := sandboxPathRe.FindStringSubmatch(r.URL.Path); m != nil {
			id = m[1]
		}
		if id == "" {
			id = *created
		}
		s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindLifecycle, Lifecycle: &ev})
	})
}

func keepBody(r *http.Request) bool {
	p := strings.TrimPrefix(r.URL.Path, "/v1")
	switch {
	case r.Method == http.MethodPost && p == "/sandboxes":
		return true
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/renew-expiration"):
		return true
	case r.Method == http.MethodPatch && strings.HasSuffix(p, "/metadata"):
		return true
	}
	return false
}

// redactBody is the body as the audit records it (wire.RedactBody): env values
// fingerprinted, image auth dropped, unparseable bodies as a placeholder.
func redactBody(b []byte) []byte { return wire.RedactBody(b) }

// createdIDKey carries a *string through the request context so the create
// handler can tell the audit middleware which sandbox it created.
type createdIDKey struct{}

func setCreatedID(r *http.Request, id string) {
	if p, ok := r.Context().Value(createdIDKey{}).(*string); ok {
		*p = id
	}
}
