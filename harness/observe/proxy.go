// Package observe is a recording reverse proxy the harness puts between a
// subject and a lifecycle server that keeps no audit trail of its own (a real
// OpenSandbox). The subject is given the proxy's address as
// OPEN_SANDBOX_DOMAIN; every lifecycle call passes through and is recorded:
// method, path, status, the created sandbox's id, the API key's fingerprint
// (never the key) and, for calls that carry one, the request body with env
// values replaced by fingerprints.
//
// Started with a View (StartFor), the proxy also gives one submission a view
// of its own sandboxes only, on a server that has no tenants: a list shows
// only the sandboxes created through that submission's proxies; a get,
// delete, renew, pause, resume, metadata, snapshot or endpoint call on
// another sandbox is forwarded as a call on a fresh unknown id, so it
// answers exactly as the server answers for an unknown sandbox (its 404, its
// wording, with the id asked for); and endpoints are rewritten to go through
// the proxy (host:port/sandboxes/{id}/proxy/{port}, the server-proxy form
// the SDKs already take), which forwards that execd and egress traffic to
// the endpoint the server gave, records it (EndpointCalls) and refuses, as
// unknown, a sandbox the submission did not create.
//
// For drill D3 on a real target the proxy itself answers the creates of one
// API key (RefuseCreates: by the key's fingerprint, never by a time window)
// with 429 and Retry-After in the form of OpenSandbox 1.1.1's Kubernetes pool
// at capacity (wire.WriteCapacityExhausted, byte for byte the bundled
// server's capacity fault): OpenSandbox's docker runtime has no pools, so the
// target itself never sends it. Such a create never reaches the target; its
// record says who answered it (Call.Injected). Other keys' creates, keyless
// ones and every other call pass through untouched.

package observe

import (
	"bytes"
	"context"
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

	"github.com/osb-capstone/acceptance/internal/fullduplex"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// maxBody is how much of a request or response body is kept for the record.
const maxBody = 1 << 20

// Kinds of recorded calls.
const (
	KindLifecycle = ""         // a lifecycle call (Calls)
	KindEndpoint  = "endpoint" // execd or egress traffic through an endpoint (EndpointCalls)
)

// Call is one recorded exchange: a lifecycle call, or (Kind "endpoint") a
// request to a sandbox's execd or egress sidecar through a rewritten
// endpoint or the server proxy route.
type Call struct {
	Time           time.Time `json:"time"`
	Kind           string    `json:"kind,omitempty"`
	Method         string    `json:"method"`
	Path           string    `json:"path"`
	Status         int       `json:"status"`
	SandboxID      string    `json:"sandbox_id,omitempty"`
	Port           int       `json:"port,omitempty"` // endpoint calls: the sandbox port (44772 execd, 18080 egress …)
	KeyFingerprint string    `json:"key_fingerprint,omitempty"`
	// Body is a lifecycle call's request body (env values fingerprinted) or an
	// egress Credential Vault write's (every secret "value" fingerprinted).
	Body json.RawMessage `json:"body,omitempty"`
	// Command is the command line of an execd POST /command sent through a
	// sandbox endpoint (its other fields, env included, are not kept).
	Command string `json:"command,omitempty"`
	// Ended is when the response was complete (endpoint calls: a streamed
	// command's end).
	Ended time.Time `json:"ended,omitzero"`
	// ExitCode is the exit code an execd POST /command stream ended with
	// (its terminal event, streamend.go); nil when it ended without one
	// (cut off, a spawn failure) or the command ran in the background: a
	// command not seen to run to completion.
	ExitCode *int `json:"exit_code,omitempty"`
	// Answer is the start of the server's answer to a lifecycle call that
	// failed on the server's side (5xx), e.g. its error code and message.
	Answer string `json:"answer,omitempty"`
	// The answer's contract, for the upgrade check (contract.go): the
	// sandbox state a lifecycle answer gave (status.state), the JSON shape
	// of its body (keys and types, no values), its error code (a 4xx/5xx
	// body's "code") and the names of its response headers (hop-by-hop and
	// per-answer ones left out).
	State     string   `json:"state,omitempty"`
	Shape     string   `json:"shape,omitempty"`
	ErrorCode string   `json:"error_code,omitempty"`
	Headers   []string `json:"headers,omitempty"`
	// Injected says the proxy answered the call itself, not the target, and
	// why (CapacityInjected): the harness's fault, never held against the
	// target or the caller.
	Injected string `json:"injected,omitempty"`
	// Held says the proxy held the call before forwarding it, how long and
	// why (HoldCommands); Time is when it was forwarded, so when it reached
	// the target.
	Held string `json:"held,omitempty"`
}

// CapacityInjected labels a create the proxy answered with 429 for drill D3
// (RefuseCreates): the target never saw it.
const CapacityInjected = "429 injected by the harness's recording proxy (OpenSandbox's docker runtime has no pools)"

// MaxRetryAfter bounds RefuseCreates' Retry-After (seconds), as the bundled
// server bounds its capacity fault's.
const MaxRetryAfter = 300

// Proxy is a running recording proxy.
type Proxy struct {
	ln       net.Listener
	srv      *http.Server
	upstream *url.URL
	rp       *httputil.ReverseProxy
	view     *View // nil: no view (every sandbox visible, endpoints as the server gives them)
	mu       sync.Mutex
	calls    []Call
	inflight int // calls not yet recorded (under mu; a WaitGroup may not be waited on while new calls arrive)
	// vanished are sandboxes the harness made disappear (Vanish): from then
	// on every call naming one is answered as the server answers an unknown
	// sandbox, and lists leave it out (under mu).
	vanished map[string]bool
	// refuse: the key fingerprints whose creates the proxy answers with 429
	// and this Retry-After in seconds (RefuseCreates; under mu).
	refuse map[string]int
	// hold, while not nil, holds every execd command until it is closed
	// (HoldCommands; under mu); holdWhy says why, for the record.
	hold    chan struct{}
	holdMax time.Duration
	holdWhy string
	// ctx is what every forwarded request runs under: canceled only when
	// the proxy closes, never because the client half-closed its side (Go's
	// server cancels a request's context when the client's connection
	// reads EOF, and a TCP relay in front of the proxy, such as the
	// confinement's forwarder, half-closes once the client has sent its
	// request: that cut command streams mid-body). A client that is really
	// gone is noticed when a write to it fails.
	ctx    context.Context
	cancel context.CancelFunc
	// transport opens a fresh connection for every forwarded request: a
	// kept-alive one races the server closing it while idle (uvicorn after
	// 5 s: "http: server closed idle connection", a 502 for a POST or a
	// DELETE, which Go does not retry), and a published port is reused by
	// a later sandbox once its own is removed.
	transport *http.Transport
}

// newTransport is the proxy's own upstream transport (see Proxy.transport).
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableKeepAlives = true
	return t
}

// Start listens on a loopback port and forwards everything to target (a
// server root URL such as http://host:port or https://host), recording it.
func Start(target string) (*Proxy, error) { return StartFor(target, nil) }

// StartFor is Start with the view v of one submission (nil: none). Every
// proxy started for one submission shares its view: a sandbox its run
// created is its reap's too.
func StartFor(target string, v *View) (*Proxy, error) {
	u, err := url.Parse(strings.TrimSuffix(target, "/"))
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("observe: target must be an http(s) URL, got %q", target)
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, upstream: u, view: v, transport: newTransport()}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = u.Host
		},
		Transport:     p.transport,
		FlushInterval: -1, // SSE through the server proxy route arrives as it happens
	}
	p.srv = &http.Server{Handler: http.HandlerFunc(p.serve), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Domain is the proxy's address in OPEN_SANDBOX_DOMAIN form (host:port, no scheme).
func (p *Proxy) Domain() string { return p.ln.Addr().String() }

// Calls returns the lifecycle calls recorded, in the order the requests
// arrived. A client sees a response before the proxy has recorded it, so
// Calls first waits (up to 10 s) for calls still in flight.
func (p *Proxy) Calls() []Call { return p.callsOf(KindLifecycle) }

// Recorded returns the lifecycle calls recorded so far without waiting for
// calls in flight (a poller that must not stall behind a long exchange).
func (p *Proxy) Recorded() []Call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Call
	for _, c := range p.calls {
		if c.Kind == KindLifecycle {
			out = append(out, c)
		}
	}
	return out
}

// EndpointCalls returns the execd and egress calls recorded (through a
// rewritten endpoint or the server proxy route), each with its sandbox id
// and port, in the order the requests arrived.
func (p *Proxy) EndpointCalls() []Call { return p.callsOf(KindEndpoint) }

// CallsSoFar returns every call recorded up to now, lifecycle and endpoint
// alike, in the order the requests arrived, without waiting for calls still
// in flight (a command stream can run for minutes): what a watcher polling
// during the run needs.
func (p *Proxy) CallsSoFar() []Call {
	p.mu.Lock()
	out := append([]Call(nil), p.calls...)
	p.mu.Unlock()
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

func (p *Proxy) callsOf(kind string) []Call {
	deadline := time.Now().Add(10 * time.Second)
	p.mu.Lock()
	for p.inflight > 0 && time.Now().Before(deadline) {
		p.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	var out []Call
	for _, c := range p.calls {
		if c.Kind == kind {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Vanish makes sandbox id disappear for the subject at once: from this call
// on, every lifecycle, endpoint or server-proxy call naming it is forwarded
// as the same call on a fresh unknown id (so the client gets exactly the
// server's answer for a sandbox that does not exist: its 404 and wording),
// and lists leave it out. A real server's DELETE is not atomic (on Docker it
// kills the container, then removes it, then its sidecar: a GET meanwhile
// still finds it, a second DELETE gets 409), so a drill that deletes a
// sandbox calls Vanish first: the subject then meets a sandbox that is gone,
// as the drill says, not one halfway through its removal. Calls already in
// flight are not affected (a command stream breaks when the server kills
// the container). The calls are still recorded, with the id asked for.
func (p *Proxy) Vanish(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.vanished == nil {
		p.vanished = map[string]bool{}
	}
	p.vanished[id] = true
}

func (p *Proxy) isVanished(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.vanished[id]
}

func (p *Proxy) anyVanished() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.vanished) > 0
}

// HoldCommands makes the proxy hold, from now on, every execd command (POST
// …/command through a rewritten endpoint or the server proxy route, on any
// sandbox) until release is called or max has passed, then forward it: drill
// D1 on a real target arms it before the subject starts and releases it once
// its deny is in the sandbox's egress policy, so the subject's first command
// reaches the sandbox only then. Nothing else is held: creates, endpoint
// lookups, uploads and pings pass at once. Each held call is recorded with
// Held (why, and how long) and the time it was forwarded. release may be
// called more than once.
func (p *Proxy) HoldCommands(max time.Duration, why string) (release func()) {
	ch := make(chan struct{})
	p.mu.Lock()
	p.hold, p.holdMax, p.holdWhy = ch, max, why
	p.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			if p.hold == ch {
				p.hold = nil
			}
			p.mu.Unlock()
			close(ch)
		})
	}
}

// waitHold waits while commands are held (HoldCommands); it returns what to
// record ("" when the call was not held).
func (p *Proxy) waitHold(ctx context.Context) string {
	p.mu.Lock()
	ch, max, why := p.hold, p.holdMax, p.holdWhy
	p.mu.Unlock()
	if ch == nil {
		return ""
	}
	start := time.Now()
	t := time.NewTimer(max)
	defer t.Stop()
	end := "released"
	select {
	case <-ch:
	case <-t.C:
		end = "not released within " + max.String() + ", forwarded anyway"
	case <-ctx.Done():
		end = "the proxy closed"
	}
	return fmt.Sprintf("held %s by the harness (%s): %s", time.Since(start).Round(time.Millisecond), why, end)
}

// RefuseCreates makes the proxy answer, from now on, every create made with
// the API key whose fingerprint is keyFP (Fingerprint) with 429
// KUBERNETES::POOL_CAPACITY_EXHAUSTED and Retry-After: retryAfterSeconds, as
// a 1.1.1 Kubernetes pool at capacity does, without forwarding it; the call
// is recorded with Injected CapacityInjected. Creates with another key or
// none, and every other call, pass through untouched. StopRefusing turns it
// off. An empty fingerprint (no key to attribute a create to) or a
// Retry-After outside 1..MaxRetryAfter is refused.
func (p *Proxy) RefuseCreates(keyFP string, retryAfterSeconds int) error {
	if keyFP == "" {
		return fmt.Errorf("observe: refusing creates needs the fingerprint of the key whose creates are refused")
	}
	if retryAfterSeconds < 1 || retryAfterSeconds > MaxRetryAfter {
		return fmt.Errorf("observe: Retry-After must be 1 to %d seconds, got %d", MaxRetryAfter, retryAfterSeconds)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.refuse == nil {
		p.refuse = map[string]int{}
	}
	p.refuse[keyFP] = retryAfterSeconds
	return nil
}

// StopRefusing lets the creates of key fingerprint keyFP through again.
func (p *Proxy) StopRefusing(keyFP string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.refuse, keyFP)
}

// refusing is the Retry-After the creates of keyFP are refused with (0: none).
func (p *Proxy) refusing(keyFP string) int {
	if keyFP == "" {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refuse[keyFP]
}

// visible says whether a listed sandbox is shown to the client: its view's
// own (every sandbox without a view), unless it vanished.
func (p *Proxy) visible(id string) bool {
	return (p.view == nil || p.view.Owns(id)) && !p.isVanished(id)
}

// Close stops the proxy: its connections and every request it still forwards.
func (p *Proxy) Close() error {
	p.cancel()
	err := p.srv.Close()
	p.transport.CloseIdleConnections()
	return err
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	// Forwarded under a context the client connection's EOF does not
	// cancel, only the proxy's Close (see Proxy.ctx). It keeps the request
	// context's values: the reverse proxy aborts a broken stream (so the
	// client sees it broken, not a clean end) only for a request that
	// carries its server's context value.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	r = r.WithContext(ctx)
	// Full duplex (internal/fullduplex): execd streams a command's output
	// as soon as it has the request, before the transport is done with the
	// request body; without it the answer was cut ("incomplete chunked
	// read" in the subject) on a loaded machine.
	defer fullduplex.Enable(w, r)()
	if id, port, ok := serverProxyRoute(r.URL.Path); ok {
		p.serveEndpoint(w, r, id, port)
		return
	}
	if !isLifecycle(r.URL.Path) {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.begin()
	defer p.end()
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
	id := sandboxIDFromPath(r.URL.Path)
	// Recorded even when the exchange is aborted (the reverse proxy panics
	// with http.ErrAbortHandler when the server's answer breaks off).
	defer func() {
		c.Status = rec.status
		c.Ended = time.Now().UTC()
		if isCreate(r) && rec.status < 300 {
			var sb struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(rec.head.Bytes(), &sb) == nil {
				c.SandboxID = sb.ID
			}
		} else if id != "" {
			c.SandboxID = id
		}
		if rec.status >= 500 {
			c.Answer = strings.ToValidUTF8(string(rec.head.Bytes()[:min(rec.head.Len(), 300)]), "")
		}
		c.State, c.Shape, c.ErrorCode = answerContract(rec.status, rec.head.Bytes())
		c.Headers = rec.headers
		p.add(c)
	}()
	retryAfter := 0
	if isCreate(r) {
		retryAfter = p.refusing(c.KeyFingerprint)
	}
	switch {
	case retryAfter > 0:
		// Drill D3: answered here, never forwarded (RefuseCreates).
		wire.WriteCapacityExhausted(rec, retryAfter)
		c.Injected = CapacityInjected
	case id != "" && p.isVanished(id):
		p.serveAsUnknown(rec, r, id)
	case isList(r) && (p.view != nil || p.anyVanished()):
		p.serveList(rec, r)
	case p.view == nil:
		p.rp.ServeHTTP(rec, r)
	case isCreate(r):
		p.serveCreate(rec, r)
	case id != "" && !p.view.Owns(id):
		p.serveAsUnknown(rec, r, id)
	case id != "" && isEndpointGet(r):
		p.serveEndpointGet(rec, r, id)
	default:
		p.rp.ServeHTTP(rec, r)
	}
}

func (p *Proxy) begin() {
	p.mu.Lock()
	p.inflight++
	p.mu.Unlock()
}

func (p *Proxy) end() {
	p.mu.Lock()
	p.inflight--
	p.mu.Unlock()
}

func (p *Proxy) add(c Call) {
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
}

// recorder keeps the status and the first bytes of the response (not for
// endpoint traffic: noHead).
type recorder struct {
	http.ResponseWriter
	status  int
	head    bytes.Buffer
	noHead  bool
	headers []string  // the answer's header names (headerNames)
	tap     io.Writer // reads the whole answer as it is forwarded (streamEnd), if set
}

func (r *recorder) WriteHeader(code int) {
	r.status = code
	r.headers = headerNames(r.ResponseWriter.Header())
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.headers == nil {
		r.headers = headerNames(r.ResponseWriter.Header()) // an implicit 200
	}
	if room := maxBody - r.head.Len(); room > 0 && !r.noHead {
		r.head.Write(b[:min(len(b), room)])
	}
	n, err := r.ResponseWriter.Write(b)
	if r.tap != nil && n > 0 {
		_, _ = r.tap.Write(b[:n]) // what the client was given
	}
	return n, err
}

// Flush lets streamed responses through as they come.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController (the reverse proxy's WebSocket
// upgrade) reach the connection.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

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
