package mockserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"log"
	"mime"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httputil"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/osb-capstone/acceptance/internal/fullduplex"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// execdEndpoint is a sandbox's loopback TCP execd endpoint: a reverse proxy
// to the agent over Sandbox.DialExecd that records the audit trail as the
// traffic passes, and routes /proxy/18080/… to the egress API.
type execdEndpoint struct {
	s         *Server
	sb        *sandbox
	ln        *detachableListener
	srv       *http.Server
	transport *http.Transport
	proxy     *httputil.ReverseProxy
	// token is the sandbox's execd access token ("" none: as 1.1.1, whose
	// server never sets one). It lives in the server's memory only: the
	// sandbox's agent, its commands and its environment never see it
	// (execd_token.go).
	token string

	// removing is set when the sandbox's removal begins, before its execd is
	// killed: from then on the streams through this endpoint are cut on
	// purpose (see cutLog).
	removing atomic.Bool

	closeOnce  sync.Once
	inflightMu sync.Mutex
	inflight   map[*inflightCommand]struct{}
}

// inflightCommand is a command whose stream is still open. Its audit event
// is recorded exactly once: when the stream ends, or, if the sandbox is
// removed first, by abandonInflight with what was seen so far.
type inflightCommand struct {
	mu       sync.Mutex
	cmd      *wire.Command
	parser   *sseParser
	start    time.Time
	recorded bool
}

func newExecdEndpoint(s *Server, sb *sandbox) (*execdEndpoint, error) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ln := &detachableListener{TCPListener: tl.(*net.TCPListener)}
	e := &execdEndpoint{s: s, sb: sb, ln: ln, inflight: map[*inflightCommand]struct{}{}}
	if s.cfg.ExecdAccessToken {
		e.token = newExecdToken()
	}
	ln.late = func(c net.Conn) { e.afterRemoval(c, false) }
	e.transport = &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return sb.rt.DialExecd(ctx)
		},
		DisableCompression:  true,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     30 * time.Second,
	}
	e.proxy = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = "execd"
			pr.Out.Host = pr.In.Host
			// The token stops here: nothing in the sandbox (an in-sandbox
			// service behind /proxy/{port} included) ever receives it.
			pr.Out.Header.Del(headerExecdToken)
			// Rewrite drops X-Forwarded-*; pass the caller's through untouched.
			for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v := pr.In.Header.Values(h); len(v) > 0 {
					pr.Out.Header[h] = v
				}
			}
		},
		Transport:     e.transport,
		FlushInterval: -1,
		ErrorLog:      e.cutLog(),
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if e.removing.Load() {
				// Its execd went with the sandbox's removal: the caller
				// meets a gone sandbox (a reset connection), never a 502.
				e.refuse(w, r, wire.AfterRemovalInFlight)
				return
			}
			if errors.Is(err, context.Canceled) || r.Context().Err() != nil || clientBodyFailed(r) {
				if t, ok := w.(*tapWriter); ok {
					t.hungUp = true // recorded as 499, never as the 502 nobody was sent
				}
				return
			}
			writeError(w, http.StatusBadGateway, "UNKNOWN", "execd of sandbox "+sb.id+" is unreachable: "+err.Error())
		},
	}
	e.srv = &http.Server{Handler: e, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second} // idle: between requests only
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

// cutLog is the ErrorLog of the proxies in front of this sandbox's execd (this
// endpoint's and the server proxy's). It passes every line on to the standard
// logger's output, as a nil ErrorLog would, but one: the body-copy read error
// logged when the sandbox is removed under a running command. Its execd is
// killed with it, so the stream really is cut mid-body, on purpose: the
// client sees the cut, and the audit records the command as killed by the
// removal (abandonInflight). A client hanging up logs nothing; a stream cut
// while the sandbox is not being removed is still logged.
func (e *execdEndpoint) cutLog() *log.Logger {
	return log.New(cutFilter{cut: e.removing.Load}, log.Prefix(), log.Flags())
}

// bodyCopyReadError is what httputil.ReverseProxy logs when the upstream's
// response body breaks off while it is being copied to the client.
var bodyCopyReadError = []byte("httputil: ReverseProxy read error during body copy")

// cutFilter drops the body-copy read error while cut() says the cut is
// expected and passes every other line to the standard logger's output.
type cutFilter struct{ cut func() bool }

func (f cutFilter) Write(p []byte) (int, error) {
	if bytes.Contains(p, bodyCopyReadError) && f.cut() {
		return len(p), nil
	}
	return log.Writer().Write(p)
}

// Addr is 127.0.0.1:<port>.
func (e *execdEndpoint) Addr() string { return e.ln.Addr().String() }

// cut is the removal's first step, right after the registry forgot the
// sandbox: the commands still streaming are recorded as killed (reason: why
// it is removed), then the endpoint stops serving (Close). The sandbox's
// execd itself is still alive; the final record reaches it through the
// transport, never through this endpoint.
func (e *execdEndpoint) cut(reason string) {
	e.removing.Store(true)
	e.abandonInflight(reason)
	e.Close()
}

// refuse answers a request for a removed sandbox as its gone container would:
// the connection is reset (SO_LINGER 0) and the call recorded as an
// execd_after_removal event (note: how it met the removal, "" when it arrived
// after it). Nothing else about the exchange is recorded (tapWriter.cut).
func (e *execdEndpoint) refuse(w http.ResponseWriter, r *http.Request, note string) {
	if t, ok := w.(*tapWriter); ok {
		t.cut = true
	}
	e.s.audit.Record(wire.Event{SandboxID: e.sb.id, Kind: wire.KindExecdAfterRemoval,
		ExecdAfterRemoval: &wire.AfterRemoval{Method: r.Method, Path: r.URL.RequestURI(), Note: note}})
	c, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // the server drops the connection
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// Close stops serving execd and drops its connections; the port itself
// lingers for the grace period (execd_linger.go).
func (e *execdEndpoint) Close() {
	e.removing.Store(true)
	e.closeOnce.Do(func() {
		_ = e.srv.Close()
		e.transport.CloseIdleConnections()
		e.linger(e.ln)
	})
}

func (e *execdEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if e.removing.Load() {
		// A request on a connection opened before the removal: as one
		// opened after it (execd_linger.go).
		e.refuse(w, r, "")
		return
	}
	if !e.authorize(w, r) {
		return
	}
	// Full duplex (internal/fullduplex), as the server proxy route: an
	// answer may start before the request body is all read.
	defer fullduplex.Enable(w, r)()
	r = watchClientBody(r)
	p := r.URL.Path
	// /proxy/44772/… is execd itself; handle it here so it is audited too.
	if rest, ok := cutProxyPort(p, execdPort); ok {
		r.URL.Path, r.URL.RawPath = rest, ""
		p = rest
	}
	if rest, ok := cutProxyPort(p, egressPort); ok && e.sb.egress != nil {
		r2 := r.Clone(r.Context())
		r2.URL.Path, r2.URL.RawPath = rest, ""
		e.sb.egress.Handler().ServeHTTP(w, r2)
		return
	}
	if e.s.keyedFaults.inject(e.s, w, r, e.sb) { // the keyed execd faults of adminRoutes (M1's among them), see keyed_fault.go
		return
	}
	switch {
	case r.Method == http.MethodPost && (p == "/command" || p == "/code" ||
		(strings.HasPrefix(p, "/session/") && strings.HasSuffix(p, "/run"))):
		e.serveCommand(w, r)
	case r.Method == http.MethodPost && p == "/files/upload":
		e.serveUpload(w, r)
	case r.Method == http.MethodGet && p == "/files/download":
		e.serveDownload(w, r)
	case (r.Method == http.MethodDelete && (p == "/files" || p == "/directories")) ||
		(r.Method == http.MethodPost && (p == "/files/mv" || p == "/directories" || p == "/files/replace" || p == "/files/permissions")):
		e.serveFileOp(w, r)
	default:
		e.proxy.ServeHTTP(w, r)
	}
}

// clientBodyKey holds, in a request's context, whether reading its body
// from the client failed (watchClientBody).
type clientBodyKey struct{}

// watchClientBody notes in r's context when reading its body from the client
// fails (it hung up, its upload unfinished), so the proxy's error handler
// tells that from an execd failure even before the request's context is
// cancelled.
func watchClientBody(r *http.Request) *http.Request {
	if r.Body == nil || r.Body == http.NoBody {
		return r
	}
	failed := new(atomic.Bool)
	r = r.WithContext(context.WithValue(r.Context(), clientBodyKey{}, failed))
	r.Body = &clientBody{ReadCloser: r.Body, failed: failed}
	return r
}

func clientBodyFailed(r *http.Request) bool {
	f, _ := r.Context().Value(clientBodyKey{}).(*atomic.Bool)
	return f != nil && f.Load()
}

type clientBody struct {
	io.ReadCloser
	failed *atomic.Bool
}

func (b *clientBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.failed.Store(true)
	}
	return n, err
}

// cutProxyPort strips a /proxy/<port> prefix.
func cutProxyPort(p string, port int) (string, bool) {
	pre := "/proxy/" + strconv.Itoa(port)
	if p == pre {
		return "/", true
	}
	if strings.HasPrefix(p, pre+"/") {
		return p[len(pre):], true
	}
	return "", false
}

// tapWriter passes the response through (flushing as the proxy flushes) and
// shows every byte to a callback.
type tapWriter struct {
	http.ResponseWriter
	status   int
	onData   func([]byte)
	onHeader func(http.Header) // may adjust the headers just before they are written
	// final, when set, records the exchange in the audit. It runs once, before
	// the client can act on the response: at WriteHeader (a client may go on
	// as soon as it has the status line) unless recordsBody says the record
	// needs the body (a download's hash), then just before a Content-Length
	// body's last bytes are written, else at finish after the proxy returns
	// (a chunked body ends only after the handler returns). A client that
	// reads the audit right after its response finds the exchange, in order.
	final       func()
	recordsBody func(status int) bool
	// cut: the exchange met its sandbox's removal and was refused
	// (execdEndpoint.refuse, which recorded it); final records nothing.
	cut bool
	// hungUp: the client went away before any answer (code: 499, as nginx
	// names it), so the audit never shows a 502 the server did not send.
	hungUp    bool
	finalOnce sync.Once
	remaining int64 // bytes of a Content-Length body still to write; -1 unknown
}

func (t *tapWriter) WriteHeader(code int) {
	if informational(code) {
		// A 100 Continue (an upload sent with "Expect: 100-continue", as
		// curl does above 1 MiB) or 103 Early Hints goes to the client as is;
		// the response and its record are still to come. Taking it for the
		// final status ended the exchange early: the upload's tee was closed
		// under the proxy, which answered 502.
		t.ResponseWriter.WriteHeader(code)
		return
	}
	if t.status == 0 {
		t.status = code
		if t.onHeader != nil {
			t.onHeader(t.Header())
		}
		t.remaining = -1
		if cl, err := strconv.ParseInt(t.Header().Get("Content-Length"), 10, 64); err == nil && code >= 200 {
			t.remaining = cl
		}
		if t.remaining == 0 || t.recordsBody == nil || !t.recordsBody(code) {
			t.finish()
		}
	}
	t.ResponseWriter.WriteHeader(code)
}

// informational is a 1xx status other than 101 Switching Protocols: an
// interim response, never the exchange's final status.
func informational(code int) bool {
	return code >= 100 && code < 200 && code != http.StatusSwitchingProtocols
}

func (t *tapWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.WriteHeader(http.StatusOK)
	}
	last := t.remaining >= 0 && int64(len(b)) >= t.remaining
	if last {
		if t.onData != nil {
			t.onData(b)
		}
		t.finish()
	}
	n, err := t.ResponseWriter.Write(b)
	if t.remaining > 0 {
		t.remaining -= int64(n)
	}
	if !last && n > 0 && t.onData != nil {
		t.onData(b[:n])
	}
	return n, err
}

// finish runs final, once.
func (t *tapWriter) finish() {
	if t.final != nil {
		t.finalOnce.Do(t.final)
	}
}

func (t *tapWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (t *tapWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// statusClientClosed is what the audit records for an exchange whose client
// hung up before any answer (nginx's 499; no answer was sent).
const statusClientClosed = 499

func (t *tapWriter) code() int {
	if t.status == 0 && t.hungUp {
		return statusClientClosed
	}
	if t.status == 0 {
		return http.StatusBadGateway
	}
	return t.status
}

// readSmallBody returns the request body for inspection when it is at most
// maxBodyBytes (nil otherwise) and leaves r.Body intact for the proxy: a
// larger body is streamed on unchanged and simply not inspected.
func readSmallBody(r *http.Request) []byte {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	if len(b) > maxBodyBytes || err != nil {
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), r.Body), r.Body}
		return nil
	}
	_ = r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b
}

// sseParser follows an execd SSE stream (bare or data:-prefixed JSON frames).
type sseParser struct {
	buf      []byte
	cmd      *wire.Command
	out      *outputLog
	complete bool
	terminal bool         // an execution_complete or error event arrived
	errBody  bytes.Buffer // first bytes of a non-SSE (error) response
}

type sseEvent struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Error *struct {
		Ename  string `json:"ename"`
		Evalue string `json:"evalue"`
	} `json:"error"`
}

func (p *sseParser) feed(b []byte) {
	p.buf = append(p.buf, b...)
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			if len(p.buf) > maxBodyBytes { // a single absurd line: stop buffering it
				p.buf = p.buf[:0]
			}
			return
		}
		line := bytes.TrimSpace(p.buf[:i])
		p.buf = p.buf[i+1:]
		p.line(line)
	}
}

func (p *sseParser) finish() {
	if len(bytes.TrimSpace(p.buf)) > 0 {
		p.line(bytes.TrimSpace(p.buf))
	}
	p.buf = nil
}

func (p *sseParser) line(line []byte) {
	if len(line) == 0 {
		return
	}
	if bytes.HasPrefix(line, []byte("data:")) {
		line = bytes.TrimSpace(line[5:])
	}
	if len(line) == 0 || line[0] != '{' {
		return
	}
	var ev sseEvent
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	switch ev.Type {
	case "init":
		if p.cmd.ID == "" {
			p.cmd.ID = ev.Text
		}
	case "stdout":
		p.cmd.StdoutBytes += int64(len(ev.Text))
		p.out.Add(p.cmd.ID, "stdout", ev.Text)
	case "stderr":
		p.cmd.StderrBytes += int64(len(ev.Text))
		p.out.Add(p.cmd.ID, "stderr", ev.Text)
	case "error":
		p.terminal = true
		if ev.Error != nil {
			if n, err := strconv.Atoi(strings.TrimSpace(ev.Error.Evalue)); err == nil {
				p.cmd.ExitCode = &n
				if n == -1 {
					p.cmd.Error = "killed"
				}
			} else {
				p.cmd.Error = strings.TrimSpace(ev.Error.Ename + ": " + ev.Error.Evalue)
			}
		}
	case "execution_complete":
		p.complete = true
		p.terminal = true
	}
}

func (e *execdEndpoint) serveCommand(w http.ResponseWriter, r *http.Request) {
	body := readSmallBody(r)
	var req struct {
		Command    string          `json:"command"`
		Code       string          `json:"code"`
		Cwd        string          `json:"cwd"`
		Timeout    json.Number     `json:"timeout"`
		Background bool            `json:"background"`
		Context    json.RawMessage `json:"context"`
	}
	_ = json.Unmarshal(body, &req)
	cmd := &wire.Command{Command: req.Command, Cwd: req.Cwd, Background: req.Background,
		StartedAt: e.s.clock.Now().UTC()}
	if cmd.Command == "" {
		cmd.Command = req.Code
	}
	if t, err := req.Timeout.Int64(); err == nil {
		cmd.TimeoutMs = t
	}
	if strings.HasPrefix(r.URL.Path, "/session/") {
		cmd.Cwd = strings.TrimSpace(cmd.Cwd)
	}
	parser := &sseParser{cmd: cmd, out: e.sb.output}
	fl := &inflightCommand{cmd: cmd, parser: parser, start: time.Now()}
	e.inflightMu.Lock()
	e.inflight[fl] = struct{}{}
	e.inflightMu.Unlock()
	defer func() {
		e.inflightMu.Lock()
		delete(e.inflight, fl)
		e.inflightMu.Unlock()
	}()
	tap := &tapWriter{ResponseWriter: w}
	tap.onData = func(b []byte) {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		if tap.status != http.StatusOK {
			if parser.errBody.Len() < 512 {
				parser.errBody.Write(b[:min(len(b), 512-parser.errBody.Len())])
			}
			return
		}
		parser.feed(b)
	}
	tap.onHeader = func(h http.Header) {
		// The reverse proxy drops hop-by-hop headers; real execd's SSE
		// responses carry Connection: keep-alive.
		if strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
			h.Set("Connection", "keep-alive")
		}
	}
	e.proxy.ServeHTTP(tap, r)
	fl.mu.Lock()
	defer fl.mu.Unlock()
	if fl.recorded { // the sandbox's removal already recorded it
		return
	}
	fl.recorded = true
	parser.finish()
	cmd.DurationMs = time.Since(fl.start).Milliseconds()
	if tap.cut {
		killed := -1
		cmd.ExitCode = &killed
		cmd.Error = "killed: sandbox removed"
	} else if st := tap.code(); st != http.StatusOK {
		cmd.Error = fmt.Sprintf("status %d: %s", st, strings.TrimSpace(parser.errBody.String()))
	} else if cmd.ExitCode == nil && parser.complete && !cmd.Background && cmd.Error == "" {
		// (A code context's failing cell ends with execution_complete
		// after its error: an error, not an exit code.)
		zero := 0
		cmd.ExitCode = &zero
	} else if cmd.ExitCode == nil && !parser.complete && !cmd.Background && cmd.Error == "" {
		cmd.Error = "stream ended without a terminal event"
	}
	e.s.audit.Record(wire.Event{SandboxID: e.sb.id, Kind: wire.KindCommand, Command: cmd})
}

// abandonInflight records every command whose stream is still open as killed
// by the sandbox's removal (reason: why it is removed), with the output bytes
// seen so far. It runs before the sandbox is destroyed, so the record is in
// the audit before the removal returns; the streams' own end adds nothing.
func (e *execdEndpoint) abandonInflight(reason string) {
	e.removing.Store(true)
	e.inflightMu.Lock()
	list := make([]*inflightCommand, 0, len(e.inflight))
	for fl := range e.inflight {
		list = append(list, fl)
	}
	e.inflightMu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].start.Before(list[j].start) })
	for _, fl := range list {
		fl.mu.Lock()
		if fl.recorded || fl.parser.terminal {
			fl.mu.Unlock()
			continue // finished; its own record is on the way
		}
		fl.recorded = true
		c := *fl.cmd
		fl.mu.Unlock()
		killed := -1
		c.ExitCode = &killed
		c.Error = "killed: sandbox removed"
		if reason != "" {
			c.Error += " (" + reason + ")"
		}
		c.DurationMs = time.Since(fl.start).Milliseconds()
		e.s.audit.Record(wire.Event{SandboxID: e.sb.id, Kind: wire.KindCommand, Command: &c})
	}
}

// uploadPart is what the multipart scanner saw for one file part.
type uploadPart struct {
	path string
	size int64
	sum  string
}

// pipeTee feeds everything the proxy reads from the request body into a pipe
// the multipart scanner reads, so uploads are hashed as they stream.
type pipeTee struct {
	src io.ReadCloser
	pw  *io.PipeWriter
}

func (t *pipeTee) Read(b []byte) (int, error) {
	n, err := t.src.Read(b)
	if n > 0 {
		if _, werr := t.pw.Write(b[:n]); werr != nil {
			return n, werr
		}
	}
	if err != nil {
		_ = t.pw.Close()
	}
	return n, err
}

func (t *pipeTee) Close() error {
	_ = t.pw.Close()
	return t.src.Close()
}

func scanMultipart(r io.Reader, boundary string) []uploadPart {
	var parts []uploadPart
	mr := multipart.NewReader(r, boundary)
	pending := ""
	for {
		part, err := mr.NextPart()
		if err != nil {
			return parts
		}
		switch part.FormName() {
		case "metadata":
			b, _ := io.ReadAll(io.LimitReader(part, 1<<16))
			var meta struct {
				Path string `json:"path"`
			}
			_ = json.Unmarshal(b, &meta)
			pending = meta.Path
		case "file":
			h := sha256.New()
			n, _ := io.Copy(h, part)
			parts = append(parts, uploadPart{path: pending, size: n, sum: hex.EncodeToString(h.Sum(nil))})
			pending = ""
		default:
			_, _ = io.Copy(io.Discard, part)
		}
		_ = part.Close()
	}
}

func (e *execdEndpoint) serveUpload(w http.ResponseWriter, r *http.Request) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	boundary := params["boundary"]
	if err != nil || !strings.HasPrefix(mt, "multipart/") || boundary == "" {
		tap := &tapWriter{ResponseWriter: w}
		tap.final = func() {
			if tap.cut {
				return
			}
			e.s.audit.Record(wire.Event{SandboxID: e.sb.id, Kind: wire.KindFile,
				File: &wire.File{Op: "upload", Status: tap.code()}})
		}
		e.proxy.ServeHTTP(tap, r)
		tap.finish()
		return
	}
	pr, pw := io.Pipe()
	done := make(chan []uploadPart, 1)
	go func() {
		parts := scanMultipart(pr, boundary)
		_, _ = io.Copy(io.Discard, pr)
		done <- parts
	}()
	r.Body = &pipeTee{src: r.Body, pw: pw}
	tap := &tapWriter{ResponseWriter: w}
	// By the time execd answers, the proxy has passed it the whole body, and
	// every byte went through the tee into the scanner.
	tap.final = func() {
		_ = pw.Close()
		parts := <-done
		_ = pr.Close()
		if tap.cut {
			return
		}
		if len(parts) == 0 {
			e.s.audit.Record(wire.Event{SandboxID: e.sb.id, Kind: wire.KindFile,
				File: &wire.File{Op: "upload", Status: tap.code()}})
		}
		for _, p := range parts {
			e.s.audit.Record(wire.Event{SandboxID: e.sb.id, Kind: wire.KindFile,
				File: &wire.File{Op: "upload", Path: p.path, Size: p.size, SHA256: p.sum, Status: tap.code()}})
		}
	}
	e.proxy.ServeHTTP(tap, r)
	tap.finish()
}

func (e *execdEndpoint) serveDownload(w http.ResponseWriter, r *http.Request) {
	var h hash.Hash = sha256.New()
	var n int64
	tap := &tapWriter{ResponseWriter: w}
	tap.onData = func(b []byte) {
		if tap.status == http.StatusOK || tap.status == http.StatusPartialContent {
			h.Write(b)
			n += int64(len(b))
		}
	}
	tap.recordsBody = func(status int) bool { return status == http.StatusOK || status == http.StatusPartialContent }
	tap.final = func() {
		if tap.cut {
			return
		}
		f := &wire.File{Op: "download", Path: r.URL.Query().Get("path"), Status: tap.code()}
		if f.Status == http.StatusOK || f.Status == http.StatusPartialContent {
			f.Size = n
			f.SHA256 = hex.EncodeToString(h.Sum(nil))
		}
		e.s.audit.Record(wire.Event{SandboxID: e.sb.id, Kind: wire.KindFile, File: f})
	}
	e.proxy.ServeHTTP(tap, r)
	tap.finish()
}

func (e *execdEndpoint) serveFileOp(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	type target struct{ op, path, dest string }
	var targets []target
	switch {
	case r.Method == http.MethodDelete:
		op := "delete"
		if p == "/directories" {
			op = "rmdir"
		}
		for _, v := range r.URL.Query()["path"] {
			targets = append(targets, target{op: op, path: v})
		}
	case p == "/files/mv":
		var moves []struct{ Src, Dest string }
		_ = json.Unmarshal(readSmallBody(r), &moves)
		for _, m := range moves {
			targets = append(targets, target{op: "mv", path: m.Src, dest: m.Dest})
		}
	default:
		op := map[string]string{"/directories": "mkdir", "/files/replace": "replace", "/files/permissions": "chmod"}[p]
		var m map[string]json.RawMessage
		_ = json.Unmarshal(readSmallBody(r), &m)
		for k := range m {
			targets = append(targets, target{op: op, path: k})
		}
	}
	if len(targets) == 0 {
		targets = append(targets, target{op: strings.TrimPrefix(p, "/")})
	}
	tap := &tapWriter{ResponseWriter: w}
	tap.final = func() {
		if tap.cut {
			return
		}
		for _, t := range targets {
			e.s.audit.Record(wire.Event{SandboxID: e.sb.id, Kind: wire.KindFile,
				File: &wire.File{Op: t.op, Path: t.path, Dest: t.dest, Status: tap.code()}})
		}
	}
	e.proxy.ServeHTTP(tap, r)
	tap.finish()
}
