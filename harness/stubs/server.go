package stubs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
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
	UserAgent  string    `json:"user_agent,omitempty"`
	Status     int       `json:"status"`
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
	// Canaries are the labels of watched secrets found in the request (exfil sink).
	Canaries []string `json:"canaries,omitempty"`
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
	ln   net.Listener
	srv  *http.Server
	done chan struct{}
	once sync.Once
	cerr error
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

type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

func (s *server) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entry := &Request{Time: time.Now().UTC(), Method: r.Method, Host: r.Host, Path: r.URL.Path,
			Query: r.URL.RawQuery, RemoteAddr: r.RemoteAddr, UserAgent: r.UserAgent()}
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), ctxKey{}, entry)))
		entry.Status = rec.status
		if entry.Status == 0 {
			entry.Status = http.StatusOK
		}
		entry.ResponseBytes = rec.bytes
		s.add(*entry)
	})
}

// entry returns the log entry being built for r (never nil).
func entry(r *http.Request) *Request {
	if e, ok := r.Context().Value(ctxKey{}).(*Request); ok {
		return e
	}
	return &Request{}
}

func fingerprint(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
