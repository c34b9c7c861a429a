package osb

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// transcriptExcerpt is how many body bytes an Exchange keeps (head+tail).
const transcriptExcerpt = 4096

// Exchange is one request/response as recorded for evidence. Secrets (API
// key, admin token, egress token, vault credential values, anything passed to
// WithSecrets/AddSecret) are replaced by "[REDACTED]".
type Exchange struct {
	Time            time.Time         `json:"time"`
	Target          string            `json:"target"` // lifecycle | execd | egress | admin
	RequestLine     string            `json:"request_line"`
	URL             string            `json:"url"`
	RequestHeaders  map[string]string `json:"request_headers,omitempty"`
	RequestBody     string            `json:"request_body,omitempty"`
	Status          int               `json:"status"`
	StatusLine      string            `json:"status_line,omitempty"`
	ResponseHeaders map[string]string `json:"response_headers,omitempty"`
	ResponseBody    string            `json:"response_body,omitempty"`
	ResponseBytes   int64             `json:"response_bytes"`
	DurationMs      int64             `json:"duration_ms"`
	Error           string            `json:"error,omitempty"`
}

// String renders the exchange as a short human-readable block.
func (e Exchange) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "> %s\n", e.RequestLine)
	for _, k := range sortedKeys(e.RequestHeaders) {
		fmt.Fprintf(&b, "> %s: %s\n", k, e.RequestHeaders[k])
	}
	if e.RequestBody != "" {
		fmt.Fprintf(&b, ">\n%s\n", indent(e.RequestBody, "> "))
	}
	if e.Error != "" {
		fmt.Fprintf(&b, "! transport error: %s\n", e.Error)
		return b.String()
	}
	fmt.Fprintf(&b, "< %s (%d ms)\n", e.StatusLine, e.DurationMs)
	for _, k := range sortedKeys(e.ResponseHeaders) {
		fmt.Fprintf(&b, "< %s: %s\n", k, e.ResponseHeaders[k])
	}
	if e.ResponseBody != "" {
		fmt.Fprintf(&b, "<\n%s\n", indent(e.ResponseBody, "< "))
	}
	return b.String()
}

// Transcript receives every exchange a Client makes.
type Transcript interface {
	Record(Exchange)
}

// TranscriptFunc adapts a function to Transcript.
type TranscriptFunc func(Exchange)

// Record calls f.
func (f TranscriptFunc) Record(e Exchange) { f(e) }

// MemoryTranscript keeps exchanges in memory; safe for concurrent use.
type MemoryTranscript struct {
	mu sync.Mutex
	ex []Exchange
}

// Record appends e.
func (m *MemoryTranscript) Record(e Exchange) {
	m.mu.Lock()
	m.ex = append(m.ex, e)
	m.mu.Unlock()
}

// Exchanges returns a copy of what was recorded.
func (m *MemoryTranscript) Exchanges() []Exchange {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Exchange(nil), m.ex...)
}

// JSONLTranscript writes one JSON object per exchange to W.
type JSONLTranscript struct {
	mu sync.Mutex
	W  io.Writer
}

// Record writes e as one line (write errors are ignored: evidence is best effort
// and must never fail the call it describes).
func (j *JSONLTranscript) Record(e Exchange) {
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	_, _ = j.W.Write(append(b, '\n'))
}

// MultiTranscript fans out to several sinks.
type MultiTranscript []Transcript

// Record sends e to every sink.
func (m MultiTranscript) Record(e Exchange) {
	for _, t := range m {
		if t != nil {
			t.Record(e)
		}
	}
}

// recordedHeaders are the headers worth keeping as evidence. Secret-bearing
// ones are always masked, even before value-based redaction.
var recordedHeaders = []string{
	"Content-Type", "Accept", "Content-Length", "Location", "Retry-After",
	HeaderRequestID, HeaderTailCursor, "Content-Disposition", "Content-Range", "Deprecation",
	HeaderAPIKey, HeaderEgressAuth, HeaderAdminToken, HeaderExecdToken, "Authorization", "Cookie",
}

var maskedHeaders = map[string]bool{
	http.CanonicalHeaderKey(HeaderAPIKey):     true,
	http.CanonicalHeaderKey(HeaderEgressAuth): true,
	http.CanonicalHeaderKey(HeaderAdminToken): true,
	http.CanonicalHeaderKey(HeaderExecdToken): true,
	"Authorization": true,
	"Cookie":        true,
}

func selectHeaders(h http.Header) map[string]string {
	out := map[string]string{}
	for _, k := range recordedHeaders {
		ck := http.CanonicalHeaderKey(k)
		v := h.Values(ck)
		if len(v) == 0 {
			continue
		}
		if maskedHeaders[ck] {
			out[k] = "[REDACTED]"
			continue
		}
		out[k] = strings.Join(v, ", ")
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// excerpt keeps the head and tail of b, marking the cut.
func excerpt(b []byte, limit int) string {
	if len(b) <= limit {
		return string(b)
	}
	half := limit / 2
	return fmt.Sprintf("%s\n...[%d bytes omitted]...\n%s", b[:half], len(b)-2*half, b[len(b)-half:])
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func indent(s, p string) string {
	return p + strings.ReplaceAll(s, "\n", "\n"+p)
}
