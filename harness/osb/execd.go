package osb

import (
	"context"
	"io"
	"net/url"
	"strconv"
	"time"
)

// Execd is a client for one sandbox's execd API, reached through the endpoint
// the lifecycle server returned. The endpoint's headers go on every request;
// the lifecycle API key never does (as in the Python SDK, CONTRACT §5.1).
type Execd struct {
	c       *Client
	base    string
	headers map[string]string
}

// Execd returns a client for the execd endpoint ep (from GetEndpoint(…, 44772)).
func (c *Client) Execd(ep Endpoint) (*Execd, error) {
	return c.ExecdAt(ep.Endpoint, ep.Headers)
}

// ExecdAt builds an execd client for a raw endpoint ("host:port[/path]", no
// scheme expected; the client's protocol is prepended when missing).
func (c *Client) ExecdAt(endpoint string, headers map[string]string) (*Execd, error) {
	if endpoint == "" {
		return nil, errNoEndpoint
	}
	base, err := baseURL(endpoint, c.scheme)
	if err != nil {
		return nil, err
	}
	for _, v := range headers {
		c.secrets.add(v)
	}
	return &Execd{c: c, base: base, headers: copyMap(headers)}, nil
}

// BaseURL is the execd base URL (scheme + endpoint).
func (e *Execd) BaseURL() string { return e.base }

func (e *Execd) call(method, path string, q url.Values) call {
	return call{target: "execd", method: method, url: joinURL(e.base, path, q), headers: copyMap(e.headers)}
}

// Do sends a raw execd request (routes without a typed method, odd bodies);
// the endpoint headers are sent, plus r.Headers.
func (e *Execd) Do(ctx context.Context, r RawRequest) (*Result[[]byte], error) {
	return e.c.doRaw(ctx, e.call(r.Method, r.Path, r.Query), r)
}

// Ping calls GET /ping (200 with an empty body).
func (e *Execd) Ping(ctx context.Context) (*Result[Empty], error) {
	return doJSON[Empty](ctx, e.c, e.call("GET", "/ping", nil), nil, false)
}

// CommandRequest is POST /command. TimeoutMs is milliseconds (0 = omitted).
type CommandRequest struct {
	Command    string            `json:"command"`
	Cwd        string            `json:"cwd,omitempty"`
	Background bool              `json:"background,omitempty"`
	TimeoutMs  int64             `json:"timeout,omitempty"`
	UID        *int              `json:"uid,omitempty"`
	GID        *int              `json:"gid,omitempty"`
	Envs       map[string]string `json:"envs,omitempty"`
}

// Run calls POST /command and consumes the SSE stream into an Execution.
// With Background set, the stream ends right after init and ExitCode stays
// nil: poll CommandStatus and CommandLogs with Execution.ID.
// A non-200 reply (e.g. 400 for a bad cwd) is returned with Decoded=false and
// its body in Meta.Body. For a 200 stream, Meta.Body holds the first MaxBody
// bytes of the raw stream. If the stream breaks (context cancelled, sandbox
// gone) the partial Execution is returned with the transport error.
func (e *Execd) Run(ctx context.Context, req CommandRequest) (*Result[Execution], error) {
	c := e.call("POST", "/command", nil)
	b, err := jsonBody(req)
	if err != nil {
		return nil, err
	}
	c.bodyBytes, c.contentType, c.accept = b, "application/json", "text/event-stream"
	ex := &Execution{}
	raw := &headTail{limit: e.c.maxBody}
	c.sinkWhen = func(s int) bool { return s == 200 }
	c.sink = func(r io.Reader) error {
		cr := &countingReader{r: io.TeeReader(r, raw)}
		err := ParseSSE(cr, func(ev Event) error { ex.Apply(ev); return nil },
			func(f string) { ex.BadFrames = append(ex.BadFrames, f) })
		ex.StreamBytes = cr.n
		return err
	}
	c.respNote = func() string { return excerpt(raw.buf.Bytes(), transcriptExcerpt) }
	m, err := e.c.do(ctx, c)
	res := &Result[Execution]{Meta: m}
	if m.Status == 200 {
		res.Meta.Body = raw.buf.Bytes()
		res.Meta.BodyTruncated = raw.n > int64(raw.buf.Len())
		if req.Background && ex.Error == nil {
			// execution_complete only means "started"; the exit status
			// comes from CommandStatus (CONTRACT §2.3, §5.4).
			ex.ExitCode = nil
		}
		res.Value = *ex
		res.Decoded = err == nil
	}
	return res, err
}

// CommandStatus is GET /command/status/{id}.
type CommandStatus struct {
	ID         string  `json:"id"`
	Content    string  `json:"content,omitempty"`
	Running    bool    `json:"running"`
	ExitCode   *int    `json:"exit_code,omitempty"`
	Error      string  `json:"error,omitempty"`
	StartedAt  string  `json:"started_at,omitempty"`
	FinishedAt *string `json:"finished_at,omitempty"`
}

// CommandStatus calls GET /command/status/{id}.
func (e *Execd) CommandStatus(ctx context.Context, id string) (*Result[CommandStatus], error) {
	return doJSON[CommandStatus](ctx, e.c, e.call("GET", "/command/status/"+url.PathEscape(id), nil), nil, true)
}

// CommandLogs is GET /command/{id}/logs: plain text and the tail cursor.
type CommandLogs struct {
	Text string
	// Cursor is EXECD-COMMANDS-TAIL-CURSOR (-1 if absent or not an integer).
	Cursor int
}

// CommandLogs calls GET /command/{id}/logs[?cursor=N] (cursor < 0 omits it).
func (e *Execd) CommandLogs(ctx context.Context, id string, cursor int) (*Result[CommandLogs], error) {
	q := url.Values{}
	if cursor >= 0 {
		q.Set("cursor", strconv.Itoa(cursor))
	}
	c := e.call("GET", "/command/"+url.PathEscape(id)+"/logs", q)
	c.accept = "text/plain"
	m, err := e.c.do(ctx, c)
	res := &Result[CommandLogs]{Meta: m}
	if err == nil && m.Status == 200 {
		res.Value.Text = string(m.Body)
		res.Value.Cursor = -1
		if n, e2 := strconv.Atoi(m.Headers.Get(HeaderTailCursor)); e2 == nil {
			res.Value.Cursor = n
		}
		res.Decoded = true
	}
	return res, err
}

// Interrupt calls DELETE /command?id= (200, empty).
func (e *Execd) Interrupt(ctx context.Context, id string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, e.c, e.call("DELETE", "/command", url.Values{"id": {id}}), nil, false)
}

// FileInfo is execd's file metadata. Mode holds octal digits as a decimal
// integer (644 means 0644).
type FileInfo struct {
	Path       string `json:"path"`
	Type       string `json:"type,omitempty"`
	Size       int64  `json:"size"`
	ModifiedAt string `json:"modified_at,omitempty"`
	CreatedAt  string `json:"created_at,omitempty"`
	Owner      string `json:"owner,omitempty"`
	Group      string `json:"group,omitempty"`
	Mode       int    `json:"mode"`
}

// Info calls GET /files/info?path=…&path=…
func (e *Execd) Info(ctx context.Context, paths ...string) (*Result[map[string]FileInfo], error) {
	return doJSON[map[string]FileInfo](ctx, e.c, e.call("GET", "/files/info", url.Values{"path": paths}), nil, true)
}

// DeleteFiles calls DELETE /files?path=… (missing files are ignored by execd).
func (e *Execd) DeleteFiles(ctx context.Context, paths ...string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, e.c, e.call("DELETE", "/files", url.Values{"path": paths}), nil, false)
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Readiness is what WaitReady observed.
type Readiness struct {
	Attempts int
	Elapsed  time.Duration
	// Last is the last ping's result (nil if none completed).
	Last *Result[Empty]
	// LastErr is the last transport error, if any.
	LastErr error
}

// WaitReady polls GET /ping every interval until a 2xx or until timeout, the
// way the Python and JS SDKs do after create (200 ms, 30 s; CONTRACT §5.2).
// ready is false on timeout or when ctx ends; the Readiness says what was seen.
func (e *Execd) WaitReady(ctx context.Context, interval, timeout time.Duration) (ready bool, r Readiness) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		r.Attempts++
		res, err := e.Ping(ctx)
		r.Last, r.LastErr = res, err
		r.Elapsed = time.Since(start)
		if err == nil && res.OK() {
			return true, r
		}
		if ctx.Err() != nil || time.Now().Add(interval).After(deadline) {
			return false, r
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return false, r
		}
	}
}
