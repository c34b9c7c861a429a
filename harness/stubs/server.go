package stubs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Request is one logged request. Secrets are never stored: a credential is
// recorded as a class and a fingerprint.
type Request struct {
	Time       time.Time `json:"time"`
	Method     string    `json:"method"`
	Host       string    `json:"host"`
	Path       string    `json:"path"`
	Query      string    `json:"query,omitempty"`
	RemoteAddr string    `json:"remote_addr"`
	// ForwardedFor is the request's X-Forwarded-For: the docker target's
	// bridge front (harness/dockertarget/bridge.go) sets it to the address
	// of the container that sent the request. Any client can set it, so it
	// is evidence, never identity.
	ForwardedFor string `json:"forwarded_for,omitempty"`
	UserAgent    string `json:"user_agent,omitempty"`
	Status       int    `json:"status"`
	// ResponseBytes is the size of the response body written.
	ResponseBytes int64 `json:"response_bytes"`
	// Credential is set by the data API: "real", "fake", "none" or "malformed".
	Credential string `json:"credential,omitempty"`
	// CredentialFingerprint is the first 12 hex digits of sha256 of the
	// presented Authorization value (never the value itself).
	CredentialFingerprint string `json:"credential_fingerprint,omitempty"`
	// TokenFingerprint names the real token a data API request carried
	// (fingerprint of the token alone), so calls are attributed per token.
	TokenFingerprint string `json:"token_fingerprint,omitempty"`
	// Body is recorded by the exfil sink.
	BodyBytes  int64  `json:"body_bytes,omitempty"`
	BodySHA256 string `json:"body_sha256,omitempty"`
	BodyPrefix string `json:"body_prefix,omitempty"`
	// Canaries are the labels of watched values (planted secrets, input
	// markers) found in the request: by the exfil sink in its whole body
	// (plain), by every stub in an upload's first 8 MiB in any encoding
	// wire.FindWatched knows ("label in body (gzip)").
	Canaries []string `json:"canaries,omitempty"`
	// EgressSandbox is the sandbox the bundled server's egress gateway
	// forwarded the request for, or on the docker target the sandbox whose
	// container sent it to the bridge front (by the engine's address of the
	// container) (wire.EgressSandboxHeader); empty when it came through
	// neither (another local process, or a target without either).
	EgressSandbox string `json:"egress_sandbox,omitempty"`
}

// Log is a concurrency-safe request log.
type Log struct {
	mu   sync.Mutex
	reqs []Request
}

func (l *Log) add(r Request) {
	l.mu.Lock()
	l.reqs = append(l.reqs, r)
	l.mu.Unlock()
}

// Requests returns a copy of the log.
func (l *Log) Requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Request(nil), l.reqs...)
}

// Len is the number of logged requests.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// Reset empties the log (between scenarios).
func (l *Log) Reset() {
	l.mu.Lock()
	l.reqs = nil
	l.mu.Unlock()
}

// server is a loopback HTTP server with a request log.
type server struct {
	Log
	watchMu sync.RWMutex
	watch   map[string]string // label → value, looked for in uploads (watchBody)
	ln      net.Listener
	srv     *http.Server
	done    chan struct{}
	once    sync.Once
	cerr    error
}

type ctxKey struct{}

// startServer listens on 127.0.0.1:0 and serves h; h may annotate the log
// entry through entry(r).
func startServer(h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("stubs: listen: %w", err)
	}
	s := &server{ln: ln, done: make(chan struct{})}
	s.srv = &http.Server{
		Handler:           s.logged(h),
		ReadHeaderTimeout: 10 * time.Second,
		// A box's idle keep-alive connections end (each costs the grader a
		// descriptor); a slow answer is never cut (no write timeout).
		IdleTimeout: 30 * time.Second, // harness/confine.IdleTimeout
	}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// URL is "http://127.0.0.1:port".
func (s *server) URL() string { return "http://" + s.ln.Addr().String() }

// Addr is "127.0.0.1:port".
func (s *server) Addr() string { return s.ln.Addr().String() }

// Close stops the server and waits for it.
func (s *server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			s.cerr = err
		}
		_ = s.srv.Close()
		<-s.done
	})
	return s.cerr
}

func (s *server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entry := &Request{Time: time.Now().UTC(), Method: r.Method, Host: r.Host, Path: r.URL.Path,
			Query: r.URL.RawQuery, RemoteAddr: r.RemoteAddr, ForwardedFor: r.Header.Get("X-Forwarded-For"), UserAgent: r.UserAgent(),
			EgressSandbox: r.Header.Get(wire.EgressSandboxHeader)}
		s.watchBody(r, entry)
		rec := &wire.StatusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), ctxKey{}, entry)))
		entry.Status = rec.Code()
		entry.ResponseBytes = rec.Bytes
		entry.Canaries = compactLabels(entry.Canaries)
		s.add(*entry)
	})
}

// watchLimit bounds how much of a request body watchBody reads.
const watchLimit = 8 << 20

// watchValues adds values (label → value) to look for in every request.
func (s *server) watchValues(m map[string]string) {
	s.watchMu.Lock()
	defer s.watchMu.Unlock()
	if s.watch == nil {
		s.watch = map[string]string{}
	}
	for k, v := range m {
		if v != "" {
			s.watch[k] = v
		}
	}
}

// watchBody looks for the watched values in the request's path, query and
// the first 8 MiB of its body, in every encoding wire.FindWatched knows; the
// handler still reads the whole body.
func (s *server) watchBody(r *http.Request, entry *Request) {
	s.watchMu.RLock()
	watched := make(map[string]string, len(s.watch))
	for k, v := range s.watch {
		watched[k] = v
	}
	s.watchMu.RUnlock()
	if len(watched) == 0 {
		return
	}
	places := []wire.WatchPlace{{Name: "path", Data: []byte(r.URL.RequestURI())}}
	if r.Body != nil && r.Body != http.NoBody {
		head, _ := io.ReadAll(io.LimitReader(r.Body, watchLimit))
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
		places = append(places, wire.WatchPlace{Name: "body", Data: head})
	}
	entry.Canaries = append(entry.Canaries, wire.FindWatched(watched, places)...)
}

// entry returns the log entry being built for r (never nil).
func entry(r *http.Request) *Request {
	if e, ok := r.Context().Value(ctxKey{}).(*Request); ok {
		return e
	}
	return &Request{}
}

// fingerprint is the audit's form (wire.Fingerprint).
func fingerprint(s string) string { return wire.Fingerprint(s) }

// writeJSON replies a JSON body given as text (wire.WriteJSON).
func writeJSON(w http.ResponseWriter, status int, body string) {
	wire.WriteJSON(w, status, json.RawMessage(body))
}

// compactLabels sorts found labels and drops duplicates; "label in body
// (base64)" is dropped when the bare label (the exfil sink's own plain
// finding) is there.
func compactLabels(found []string) []string {
	if len(found) == 0 {
		return nil
	}
	bare := map[string]bool{}
	for _, c := range found {
		if !strings.Contains(c, " in ") {
			bare[c] = true
		}
	}
	out := found[:0]
	for _, c := range found {
		if l, _, ok := strings.Cut(c, " in "); ok && bare[l] {
			continue
		}
		out = append(out, c)
	}
	sort.Strings(out)
	return slices.Compact(out)
}
