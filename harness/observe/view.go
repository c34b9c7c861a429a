package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// View is one submission's share of a server without tenants: the sandboxes
// created through its proxies, and the endpoints the server gave for them.
// Safe for concurrent use; every proxy started for the submission shares it.
type View struct {
	mu        sync.Mutex
	owned     map[string]bool
	order     []string
	endpoints map[string]*url.URL // "id/port" → the endpoint the server gave, as a base URL
	class     *Class              // the grade's other views (nil: none known)
}

// NewView is an empty view: a submission that has created nothing sees nothing.
func NewView() *View {
	return &View{owned: map[string]bool{}, endpoints: map[string]*url.URL{}}
}

// Class is the views of one grade's submissions on one server without
// tenants: which sandbox was created through which submission's proxies, as
// learned from the create answers they relayed. Safe for concurrent use.
type Class struct {
	mu      sync.Mutex
	creator map[string]*View
}

// NewClass is a class no sandbox was created in yet.
func NewClass() *Class { return &Class{creator: map[string]*View{}} }

// NewView is an empty view of one submission of the class.
func (c *Class) NewView() *View {
	v := NewView()
	v.class = c
	return v
}

// Owns reports whether the sandbox was created through this view's proxies.
func (v *View) Owns(id string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.owned[id]
}

// Mine says whether the view's submission may reach sandbox id (the box's
// guard asks it: confine.Request.Owns): its own, and an id no submission of
// its class created (the server answers for it as for any unknown sandbox);
// never a sandbox a classmate's proxies relayed the create of.
func (v *View) Mine(id string) bool {
	if v.Owns(id) {
		return true
	}
	if v.class == nil {
		return true
	}
	v.class.mu.Lock()
	defer v.class.mu.Unlock()
	_, other := v.class.creator[id]
	return !other
}

// IDs are the sandboxes created through this view's proxies, in order.
func (v *View) IDs() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.order)
}

func (v *View) add(id string) {
	if c := v.class; c != nil {
		c.mu.Lock()
		if _, ok := c.creator[id]; !ok {
			c.creator[id] = v
		}
		c.mu.Unlock()
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.owned[id] {
		v.owned[id] = true
		v.order = append(v.order, id)
	}
}

func (v *View) setEndpoint(id string, port int, base *url.URL) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.endpoints[id+"/"+strconv.Itoa(port)] = base
}

func (v *View) endpoint(id string, port int) (*url.URL, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	u, ok := v.endpoints[id+"/"+strconv.Itoa(port)]
	return u, ok
}

// maxListPages bounds how many pages of the server's list the proxy reads
// to filter one list call (200 a page).
const maxListPages = 500

// forwardBuffered forwards r upstream and returns the whole response, for
// the proxy to read or rewrite before the client sees it.
func (p *Proxy) forwardBuffered(r *http.Request) *httptest.ResponseRecorder {
	rr := httptest.NewRecorder()
	p.rp.ServeHTTP(rr, r)
	return rr
}

// writeBuffered sends a buffered response with body in place of its own.
func writeBuffered(w http.ResponseWriter, rr *httptest.ResponseRecorder, body []byte) {
	for k, vs := range rr.Header() {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rr.Code)
	_, _ = w.Write(body)
}

// proxyFailure is the proxy's own answer when it cannot give a view safely
// (the server's answer could not be read): a 502 naming the proxy, never the
// server's unfiltered answer.
func proxyFailure(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadGateway)
	b, _ := json.Marshal(map[string]string{"code": "ACCEPTANCE::RECORDING_PROXY", "message": "the harness's recording proxy " + why})
	_, _ = w.Write(b)
}

// serveCreate forwards a create and adds the new sandbox to the view before
// the client learns its id (its next call may name it at once).
func (p *Proxy) serveCreate(w http.ResponseWriter, r *http.Request) {
	rr := p.forwardBuffered(r)
	if rr.Code < 300 {
		var sb struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(rr.Body.Bytes(), &sb) == nil && sb.ID != "" {
			p.view.add(sb.ID)
		}
	}
	writeBuffered(w, rr, rr.Body.Bytes())
}

type listPage struct {
	Items      []json.RawMessage `json:"items"`
	Pagination struct {
		Page        int  `json:"page"`
		PageSize    int  `json:"pageSize"`
		TotalItems  int  `json:"totalItems"`
		TotalPages  int  `json:"totalPages"`
		HasNextPage bool `json:"hasNextPage"`
	} `json:"pagination"`
}

// serveList answers a list with the view's sandboxes only (without a view:
// every sandbox), never one that vanished (Vanish): the client's
// request goes to the server as sent (so a bad page or filter gets the
// server's own error), then every page of the same filter is read and the
// view's sandboxes are paginated as the client asked.
func (p *Proxy) serveList(w http.ResponseWriter, r *http.Request) {
	rr := p.forwardBuffered(r)
	if rr.Code != http.StatusOK {
		writeBuffered(w, rr, rr.Body.Bytes())
		return
	}
	var first listPage
	if err := json.Unmarshal(rr.Body.Bytes(), &first); err != nil {
		proxyFailure(w, "could not read the server's list: "+err.Error())
		return
	}
	var mine []json.RawMessage
	seen := map[string]bool{}
	q := r.URL.Query()
	q.Set("pageSize", "200")
	for page := 1; page <= maxListPages; page++ {
		q.Set("page", strconv.Itoa(page))
		pr := r.Clone(r.Context())
		pr.URL.RawQuery = q.Encode()
		pr.Body, pr.ContentLength = http.NoBody, 0
		prr := p.forwardBuffered(pr)
		var lp listPage
		if prr.Code != http.StatusOK || json.Unmarshal(prr.Body.Bytes(), &lp) != nil {
			proxyFailure(w, fmt.Sprintf("could not read page %d of the server's list (status %d)", page, prr.Code))
			return
		}
		for _, it := range lp.Items {
			var sb struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(it, &sb) == nil && p.visible(sb.ID) && !seen[sb.ID] {
				seen[sb.ID] = true
				mine = append(mine, it)
			}
		}
		if !lp.Pagination.HasNextPage || len(lp.Items) == 0 {
			break
		}
	}
	page, size := max(first.Pagination.Page, 1), max(first.Pagination.PageSize, 1)
	total := len(mine)
	pages := (total + size - 1) / size
	items := []json.RawMessage{}
	if start := (page - 1) * size; start < total {
		items = mine[start:min(start+size, total)]
	}
	out := listPage{Items: items}
	out.Pagination.Page, out.Pagination.PageSize = page, size
	out.Pagination.TotalItems, out.Pagination.TotalPages, out.Pagination.HasNextPage = total, pages, page < pages
	body, err := json.Marshal(out)
	if err != nil {
		proxyFailure(w, "could not write the list: "+err.Error())
		return
	}
	writeBuffered(w, rr, body)
}

// serveAsUnknown forwards a call on another's sandbox as the same call on a
// fresh random id the server has never seen, so the client gets exactly the
// server's answer for an unknown sandbox (its 404 and wording, or the
// validation error it gives first), with the id it asked for in place of
// the random one. Nothing reaches the other sandbox.
func (p *Proxy) serveAsUnknown(w http.ResponseWriter, r *http.Request, id string) {
	unknown := uuid.NewString()
	esc := r.URL.EscapedPath()
	segs := strings.Split(esc, "/")
	for i := 0; i+1 < len(segs); i++ {
		if segs[i] == "sandboxes" {
			segs[i+1] = unknown
			break
		}
	}
	out := r.Clone(r.Context())
	newEsc := strings.Join(segs, "/")
	dec, err := url.PathUnescape(newEsc)
	if err != nil {
		proxyFailure(w, "could not rewrite the path: "+err.Error())
		return
	}
	out.URL.Path, out.URL.RawPath = dec, ""
	if dec != newEsc {
		out.URL.RawPath = newEsc
	}
	out.RequestURI = ""
	rr := p.forwardBuffered(out)
	quoted, _ := json.Marshal(id)
	body := bytes.ReplaceAll(rr.Body.Bytes(), []byte(unknown), quoted[1:len(quoted)-1])
	for _, h := range []string{"Location", "Content-Location"} {
		if v := rr.Header().Get(h); v != "" {
			rr.Header().Set(h, strings.ReplaceAll(v, unknown, url.PathEscape(id)))
		}
	}
	writeBuffered(w, rr, body)
}

// serveEndpointGet forwards an endpoint call on the view's own sandbox and
// rewrites the endpoint to go through this proxy, in the server-proxy form
// {proxy}/sandboxes/{id}/proxy/{port} (no scheme, headers kept).
func (p *Proxy) serveEndpointGet(w http.ResponseWriter, r *http.Request, id string) {
	rr := p.forwardBuffered(r)
	body := rr.Body.Bytes()
	port, perr := strconv.Atoi(endpointPort(r.URL.Path))
	if rr.Code == http.StatusOK && perr == nil {
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			proxyFailure(w, "could not read the server's endpoint: "+err.Error())
			return
		}
		ep, _ := m["endpoint"].(string)
		base, err := url.Parse(p.upstream.Scheme + "://" + ep)
		if ep == "" || err != nil || base.Host == "" {
			proxyFailure(w, fmt.Sprintf("could not read the server's endpoint %q", ep))
			return
		}
		p.view.setEndpoint(id, port, base)
		m["endpoint"] = p.Domain() + "/sandboxes/" + url.PathEscape(id) + "/proxy/" + strconv.Itoa(port)
		if body, err = json.Marshal(m); err != nil {
			proxyFailure(w, "could not write the endpoint: "+err.Error())
			return
		}
	}
	writeBuffered(w, rr, body)
}

// serveEndpoint forwards execd or egress traffic that came through a
// rewritten endpoint or the server proxy route, and records it. Another's
// sandbox is answered as an unknown one by the server's own proxy route.
func (p *Proxy) serveEndpoint(w http.ResponseWriter, r *http.Request, id string, port int) {
	p.begin()
	defer p.end()
	isCommand := r.Method == http.MethodPost && strings.HasSuffix(strings.SplitN(serverProxyRest(r.URL.EscapedPath()), "?", 2)[0], "/command")
	held := ""
	if isCommand {
		held = p.waitHold(r.Context()) // drill D1 (HoldCommands); Time is when it goes on
	}
	c := Call{Time: time.Now().UTC(), Kind: KindEndpoint, Method: r.Method, Path: r.URL.RequestURI(), SandboxID: id, Port: port,
		KeyFingerprint: Fingerprint(r.Header.Get("OPEN-SANDBOX-API-KEY")), Held: held}
	var cmd *bodyTee
	if isCommand && r.Body != nil {
		// The command line is read from the body as it is forwarded, never
		// ahead of it: execd may answer before the body is complete (full duplex).
		cmd = newBodyTee(r.Body)
		r.Body = cmd
	}
	var vault *bodyTee
	if isVaultWrite(r) && r.Body != nil {
		// A Credential Vault write: kept with its secret values replaced by
		// fingerprints (VaultWrite), read as it is forwarded.
		vault = newBodyTee(r.Body)
		r.Body = vault
	}
	rec := &recorder{ResponseWriter: w, status: http.StatusOK, noHead: true}
	var end *streamEnd
	if cmd != nil {
		end = &streamEnd{}
		rec.tap = end
	}
	defer func() { // recorded even when aborted (http.ErrAbortHandler: the stream broke off)
		// A call is recorded (and visible to Calls, EndpointCalls and
		// CallsSoFar) only once its body is: the exchange may end before
		// the transport has read it (see bodyTee).
		if cmd != nil {
			b, whole := cmd.finish(unblockBody(w))
			c.Command = commandIn(b, !whole)
			if rec.status == http.StatusOK && whole && !backgroundIn(b) {
				c.ExitCode = end.exit
			}
		}
		if vault != nil {
			if b, whole := vault.finish(unblockBody(w)); whole {
				c.Body = redactVault(b)
			}
		}
		c.Status = rec.status
		c.Ended = time.Now().UTC()
		c.Headers = rec.headers
		p.add(c)
	}()
	switch base, ok := p.endpointOf(id, port); {
	case p.isVanished(id), p.view != nil && !p.view.Owns(id):
		p.serveAsUnknown(rec, r, id)
	case ok:
		rest := serverProxyRest(r.URL.EscapedPath())
		rp := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme, pr.Out.URL.Host = base.Scheme, base.Host
				joined := strings.TrimSuffix(base.EscapedPath(), "/") + rest
				pr.Out.URL.Path, _ = url.PathUnescape(joined)
				pr.Out.URL.RawPath = joined
				pr.Out.URL.RawQuery = r.URL.RawQuery
				pr.Out.Host = base.Host
				pr.SetXForwarded()
			},
			Transport:     p.transport,
			FlushInterval: -1, // SSE (a command's output) arrives as it happens
		}
		rp.ServeHTTP(rec, r)
	default:
		p.rp.ServeHTTP(rec, r) // the server's own proxy route
	}
}

// isVaultWrite is a POST, PUT or PATCH of an egress sidecar's
// /credential-vault (CONTRACT §3.5).
func isVaultWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return false
	}
	rest := strings.SplitN(serverProxyRest(r.URL.EscapedPath()), "?", 2)[0]
	return strings.TrimSuffix(rest, "/") == "/credential-vault"
}

// redactVault is a vault write's body with every "value" string (an inline
// credential's secret) replaced by "fingerprint:" and its Fingerprint; nil
// when it is not JSON.
func redactVault(body []byte) json.RawMessage {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var walk func(any) any
	walk = func(x any) any {
		switch t := x.(type) {
		case map[string]any:
			for k, e := range t {
				if s, ok := e.(string); ok && k == "value" {
					t[k] = "fingerprint:" + Fingerprint(s)
					continue
				}
				t[k] = walk(e)
			}
		case []any:
			for i, e := range t {
				t[i] = walk(e)
			}
		}
		return x
	}
	b, err := json.Marshal(walk(v))
	if err != nil {
		return nil
	}
	return b
}

// commandIn is the command line of an execd command request's body ("" if
// the body was over maxBody or is not one).
func commandIn(body []byte, over bool) string {
	if over {
		return ""
	}
	var req struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	return req.Command
}

// bodyTee passes a request body through and keeps its first maxBody bytes.
//
// What it keeps is what the client sent, not only what the upstream took:
// the transport sends a body in its own goroutine, after the request's
// header, and a server that answers without reading the body (or before it
// has all of it) ends the exchange while that goroutine has read nothing or
// part of it; the reverse proxy then closes the body and the rest is never
// read. Before a call is recorded, finish stops the transport's reads (after
// the one in flight, if any) and reads what is left of the client's body
// itself, so a recorded call always has its body (a Credential Vault write
// whose server answered first was recorded empty: the recording race of
// TestVaultWriteRecordedWithoutItsSecret).
type bodyTee struct {
	r io.ReadCloser

	mu       sync.Mutex
	cond     *sync.Cond // signalled when a Read ends
	reading  bool
	finished bool // finish was called: the transport reads no more
	eof      bool // the client's body was read to its end
	buf      bytes.Buffer
	over     bool
}

func newBodyTee(r io.ReadCloser) *bodyTee {
	t := &bodyTee{r: r}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// errTeeFinished is what a Read after finish gets: the exchange is over.
var errTeeFinished = errors.New("observe: request body read after its exchange ended")

func (t *bodyTee) Read(b []byte) (int, error) {
	t.mu.Lock()
	if t.finished {
		t.mu.Unlock()
		return 0, errTeeFinished
	}
	t.reading = true
	t.mu.Unlock()
	n, err := t.r.Read(b)
	t.mu.Lock()
	t.keep(b[:n], err)
	t.reading = false
	t.cond.Broadcast()
	t.mu.Unlock()
	return n, err
}

// keep records what one read of the client's body gave (under mu).
func (t *bodyTee) keep(b []byte, err error) {
	if room := maxBody - t.buf.Len(); len(b) > 0 && !t.over {
		if len(b) > room {
			t.over = true
		} else {
			t.buf.Write(b)
		}
	}
	if err == io.EOF {
		t.eof = true
	}
}

// Close ends the transport's use of the body; the client's body itself is
// closed by the server once the handler returns (closing it here would wait
// on a read blocked on the client).
func (t *bodyTee) Close() error { return nil }

// finish stops the transport's reads, waiting for the one in flight (unblock
// names what makes a read blocked on the client return: the connection's
// read deadline), and reads the rest of the client's body, up to maxBody+1
// bytes. It returns what was kept and whether it was over maxBody or cut
// short (the client never sent the rest).
func (t *bodyTee) finish(unblock func() (reset func())) (body []byte, whole bool) {
	t.mu.Lock()
	if !(t.eof && !t.reading) {
		t.mu.Unlock()
		defer unblock()()
		t.mu.Lock()
	}
	for t.reading {
		t.cond.Wait()
	}
	t.finished = true
	t.mu.Unlock()
	// Only this goroutine reads from here on.
	chunk := make([]byte, 32<<10)
	for !t.eof && !t.over {
		n, err := t.r.Read(chunk)
		t.keep(chunk[:n], err)
		if err != nil {
			break
		}
	}
	return t.buf.Bytes(), t.eof && !t.over
}

// bodyGrace is how long a recorded call waits for the rest of a request
// body its client has not sent by the time the exchange ended.
const bodyGrace = 5 * time.Second

// unblockBody makes a read of the request body that waits on the client
// return within bodyGrace (the client sent a partial body and stopped); the
// function it returns lifts that deadline again.
func unblockBody(w http.ResponseWriter) func() (reset func()) {
	return func() func() {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(bodyGrace))
		return func() { _ = rc.SetReadDeadline(time.Time{}) }
	}
}

func (p *Proxy) endpointOf(id string, port int) (*url.URL, bool) {
	if p.view == nil {
		return nil, false
	}
	return p.view.endpoint(id, port)
}

// serverProxyRoute matches /{,v1/}sandboxes/{id}/proxy/{port}[/...].
func serverProxyRoute(path string) (id string, port int, ok bool) {
	parts := strings.Split(strings.TrimPrefix(trimV1(path), "/"), "/")
	if len(parts) < 4 || parts[0] != "sandboxes" || parts[2] != "proxy" || parts[1] == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(parts[3])
	if err != nil {
		return "", 0, false
	}
	return parts[1], n, true
}

// serverProxyRest is what follows /sandboxes/{id}/proxy/{port} in an escaped path ("" or "/…").
func serverProxyRest(esc string) string {
	parts := strings.SplitN(strings.TrimPrefix(trimV1(esc), "/"), "/", 5)
	if len(parts) < 5 {
		return ""
	}
	return "/" + parts[4]
}

func isList(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.TrimSuffix(trimV1(r.URL.Path), "/") == "/sandboxes"
}

func isEndpointGet(r *http.Request) bool {
	return r.Method == http.MethodGet && endpointPort(r.URL.Path) != ""
}

// endpointPort is {port} of /sandboxes/{id}/endpoints/{port}, else "".
func endpointPort(path string) string {
	parts := strings.Split(strings.Trim(trimV1(path), "/"), "/")
	if len(parts) == 4 && parts[0] == "sandboxes" && parts[2] == "endpoints" {
		return parts[3]
	}
	return ""
}
