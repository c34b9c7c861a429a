package osb

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// call describes one request.
type call struct {
	target  string // lifecycle | execd | egress | admin
	method  string
	url     string
	headers map[string]string
	// body: either bodyBytes (JSON etc.) or stream (not recorded in full).
	bodyBytes   []byte
	stream      io.Reader
	contentType string
	// bodyNote replaces the request body in the transcript (e.g. for uploads).
	bodyNote string
	accept   string
	// sink, when set and the status is successStatus, receives the body
	// instead of Meta.Body (downloads, SSE).
	sink     func(r io.Reader) error
	sinkWhen func(status int) bool
	respNote func() string // transcript text for a sunk body
	// inspect sees the response body before it is recorded (used to learn
	// secrets the response itself carries, e.g. the egress token).
	inspect func(body []byte)
}

// do performs c, fills Meta, records the transcript and returns the response
// status. err is non-nil only for transport failures (and sink errors).
func (cl *Client) do(ctx context.Context, c call) (Meta, error) {
	var m Meta
	m.URL = c.url
	var body io.Reader
	if c.stream != nil {
		body = c.stream
	} else if c.bodyBytes != nil {
		body = bytes.NewReader(c.bodyBytes)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, c.url, body)
	if err != nil {
		return m, fmt.Errorf("osb: build request: %w", err)
	}
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	if c.accept != "" {
		req.Header.Set("Accept", c.accept)
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	m.RequestLine = requestLine(req)
	ex := Exchange{
		Time:           time.Now().UTC(),
		Target:         c.target,
		RequestLine:    m.RequestLine,
		URL:            cl.secrets.redact(c.url),
		RequestHeaders: selectHeaders(req.Header),
	}
	switch {
	case c.bodyNote != "":
		ex.RequestBody = c.bodyNote
	case c.bodyBytes != nil:
		ex.RequestBody = excerpt(c.bodyBytes, transcriptExcerpt)
	}
	start := time.Now()
	resp, err := cl.http.Do(req)
	if err != nil {
		m.Duration = time.Since(start)
		ex.DurationMs = m.Duration.Milliseconds()
		ex.Error = err.Error()
		cl.record(ex)
		return m, fmt.Errorf("osb: %s %s: %w", c.method, c.url, err)
	}
	defer resp.Body.Close()
	m.Status = resp.StatusCode
	m.StatusLine = resp.Proto + " " + resp.Status
	m.Headers = resp.Header
	ex.Status, ex.StatusLine = m.Status, m.StatusLine
	ex.ResponseHeaders = selectHeaders(resp.Header)

	var rerr error
	if c.sink != nil && (c.sinkWhen == nil || c.sinkWhen(resp.StatusCode)) {
		cr := &countingReader{r: resp.Body}
		rerr = c.sink(cr)
		m.BodyBytes = cr.n
		if c.respNote != nil {
			ex.ResponseBody = c.respNote()
		}
	} else {
		lr := io.LimitReader(resp.Body, cl.maxBody+1)
		b, e := io.ReadAll(lr)
		rerr = e
		if int64(len(b)) > cl.maxBody {
			b = b[:cl.maxBody]
			m.BodyTruncated = true
			n, _ := io.Copy(io.Discard, resp.Body)
			m.BodyBytes = int64(len(b)) + n
		} else {
			m.BodyBytes = int64(len(b))
		}
		m.Body = b
		ex.ResponseBody = excerpt(b, transcriptExcerpt)
	}
	if c.inspect != nil {
		c.inspect(m.Body)
	}
	m.Duration = time.Since(start)
	ex.DurationMs = m.Duration.Milliseconds()
	ex.ResponseBytes = m.BodyBytes
	if rerr != nil {
		ex.Error = rerr.Error()
		rerr = fmt.Errorf("osb: %s %s: reading body: %w", c.method, c.url, rerr)
	}
	cl.record(ex)
	return m, rerr
}

func (cl *Client) record(ex Exchange) {
	if cl.transcript == nil {
		return
	}
	ex.URL = cl.secrets.redact(ex.URL)
	ex.RequestLine = cl.secrets.redact(ex.RequestLine)
	ex.RequestBody = cl.secrets.redact(ex.RequestBody)
	ex.ResponseBody = cl.secrets.redact(ex.ResponseBody)
	ex.Error = cl.secrets.redact(ex.Error)
	for k, v := range ex.RequestHeaders {
		ex.RequestHeaders[k] = cl.secrets.redact(v)
	}
	for k, v := range ex.ResponseHeaders {
		ex.ResponseHeaders[k] = cl.secrets.redact(v)
	}
	cl.transcript.Record(ex)
}

func requestLine(r *http.Request) string {
	return r.Method + " " + r.URL.RequestURI() + " HTTP/1.1"
}

// doJSON sends an optional JSON body and decodes a success body into T when
// the status is one of success (any 2xx if success is empty). wantBody makes
// an empty success body a decode error.
func doJSON[T any](ctx context.Context, cl *Client, c call, in any, wantBody bool, success ...int) (*Result[T], error) {
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("osb: encode request: %w", err)
		}
		c.bodyBytes = b
		c.contentType = "application/json"
	}
	if c.accept == "" {
		c.accept = "application/json"
	}
	m, err := cl.do(ctx, c)
	r := &Result[T]{Meta: m}
	if err != nil {
		return r, err
	}
	if !isSuccess(m.Status, success) {
		return r, nil
	}
	if len(bytes.TrimSpace(m.Body)) == 0 {
		if wantBody {
			return r, fmt.Errorf("osb: %s: status %d with an empty body, expected JSON", m.RequestLine, m.Status)
		}
		r.Decoded = true
		return r, nil
	}
	if _, isEmpty := any(&r.Value).(*Empty); isEmpty {
		r.Decoded = true
		return r, nil
	}
	if m.BodyTruncated {
		return r, fmt.Errorf("osb: %s: body larger than %d bytes, not decoded", m.RequestLine, cl.maxBody)
	}
	if err := json.Unmarshal(m.Body, &r.Value); err != nil {
		return r, fmt.Errorf("osb: %s: decode %d body: %w", m.RequestLine, m.Status, err)
	}
	r.Decoded = true
	return r, nil
}

func isSuccess(status int, success []int) bool {
	if len(success) == 0 {
		return status >= 200 && status < 300
	}
	for _, s := range success {
		if s == status {
			return true
		}
	}
	return false
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// joinURL appends path (which starts with "/") and an optional query to base.
func joinURL(base, path string, q url.Values) string {
	u := base + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

func itoa(i int) string { return strconv.Itoa(i) }

var errNoEndpoint = errors.New("osb: endpoint is empty")
