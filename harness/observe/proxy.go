// Package observe is a recording reverse proxy the harness puts between a
// subject and a lifecycle server that keeps no audit trail of its own (a real
// OpenSandbox). The subject is given the proxy's address as
// OPEN_SANDBOX_DOMAIN; every lifecycle call passes through unchanged and is
// recorded: method, path, status, the created sandbox's id, the API key's
// fingerprint (never the key) and, for calls that carry one, the request body
// with env values replaced by fingerprints. It sees lifecycle calls only:
// execd traffic goes straight to the endpoints the server hands out.
package observe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// maxBody is how much of a request or response body is kept for the record.
const maxBody = 1 << 20

// Call is one recorded lifecycle exchange.
type Call struct {
	Time           time.Time       `json:"time"`
	Method         string          `json:"method"`
	Path           string          `json:"path"`
	Status         int             `json:"status"`
	SandboxID      string          `json:"sandbox_id,omitempty"`
	KeyFingerprint string          `json:"key_fingerprint,omitempty"`
	Body           json.RawMessage `json:"body,omitempty"`
}

// Proxy is a running recording proxy.
type Proxy struct {
	ln       net.Listener
	srv      *http.Server
	mu       sync.Mutex
	calls    []Call
	inflight int // lifecycle calls not yet recorded (under mu; a WaitGroup may not be waited on while new calls arrive)
}

// Start listens on a loopback port and forwards everything to target (a
// server root URL such as http://host:port or https://host).
func Start(target string) (*Proxy, error) {
	u, err := url.Parse(strings.TrimSuffix(target, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("observe: target must be an http(s) URL, got %q", target)
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = u.Host
		},
		FlushInterval: -1, // SSE through the server proxy route arrives as it happens
	}
	p.srv = &http.Server{Handler: p.record(rp), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Domain is the proxy's address in OPEN_SANDBOX_DOMAIN form (host:port, no scheme).
func (p *Proxy) Domain() string { return p.ln.Addr().String() }

// Calls returns what was recorded, in the order the requests arrived. A
// client sees a response before the proxy has recorded it, so Calls first
// waits (up to 10 s) for lifecycle calls still in flight.
func (p *Proxy) Calls() []Call {
	deadline := time.Now().Add(10 * time.Second)
	p.mu.Lock()
	for p.inflight > 0 && time.Now().Before(deadline) {
		p.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	out := append([]Call(nil), p.calls...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Close stops the proxy.
func (p *Proxy) Close() error { return p.srv.Close() }

func (p *Proxy) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isLifecycle(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		p.inflight++
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.inflight--
			p.mu.Unlock()
		}()
		c := Call{Time: time.Now().UTC(), Method: r.Method, Path: r.URL.RequestURI(), KeyFingerprint: Fingerprint(r.Header.Get("OPEN-SANDBOX-API-KEY"))}
		if r.Body != nil && (r.Method == http.MethodPost || r.Method == http.MethodPatch || r.Method == http.MethodPut) {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			if err == nil && len(body) <= maxBody {
				c.Body = redactBody(body)
				r.Body = io.NopCloser(bytes.NewReader(body))
			} else {
				// Too large to record: forward what was read and the rest untouched.
				r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
			}
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		c.Status = rec.status
		if isCreate(r) && rec.status < 300 {
			var sb struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(rec.head.Bytes(), &sb) == nil {
				c.SandboxID = sb.ID
			}
		} else if id := sandboxIDFromPath(r.URL.Path); id != "" {
			c.SandboxID = id
		}
		p.mu.Lock()
		p.calls = append(p.calls, c)
		p.mu.Unlock()
	})
}

// recorder keeps the status and the first bytes of the response.
type recorder struct {
	http.ResponseWriter
	status int
	head   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if room := maxBody - r.head.Len(); room > 0 {
		r.head.Write(b[:min(len(b), room)])
	}
	return r.ResponseWriter.Write(b)
}

// Flush lets streamed responses through as they come.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func trimV1(path string) string { return strings.TrimPrefix(path, "/v1") }

// isLifecycle is true for the lifecycle routes (not the server proxy's traffic).
func isLifecycle(path string) bool {
	p := trimV1(path)
	if !strings.HasPrefix(p, "/sandboxes") {
		return false
	}
	parts := strings.Split(strings.Trim(p, "/"), "/")
	return !(len(parts) >= 3 && parts[2] == "proxy")
}

func isCreate(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.TrimSuffix(trimV1(r.URL.Path), "/") == "/sandboxes"
}

func sandboxIDFromPath(path string) string {
	parts := strings.Split(strings.Trim(trimV1(path), "/"), "/")
	if len(parts) >= 2 && parts[0] == "sandboxes" {
		return parts[1]
	}
	return ""
}

// Fingerprint names a secret without revealing it: the first 12 hex digits of
// its sha256, the form the bundled server's audit uses (wire.Fingerprint); ""
// for no secret.
func Fingerprint(v string) string {
	if v == "" {
		return ""
	}
	return wire.Fingerprint(v)
}

// redactBody is a create request's body as the bundled server's audit records
// it (wire.RedactBody): env values fingerprinted, image credentials
// "redacted", other JSON kept as sent.
func redactBody(b []byte) json.RawMessage { return wire.RedactBody(b) }
