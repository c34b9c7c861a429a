package osb

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Meta is what every call reports about the HTTP exchange, whatever the status.
type Meta struct {
	// RequestLine is "METHOD /path?query HTTP/1.1"; URL is the full URL.
	RequestLine string
	URL         string
	// Status is the HTTP status code (0 if no response arrived).
	Status int
	// StatusLine is e.g. "HTTP/1.1 202 Accepted".
	StatusLine string
	// Headers are the response headers.
	Headers http.Header
	// Body is the raw response body (up to the client's max body; for a
	// download that succeeded it is empty, the bytes went to the writer).
	Body          []byte
	BodyTruncated bool
	// BodyBytes is how many body bytes were read in total.
	BodyBytes int64
	Duration  time.Duration
}

// OK reports whether Status is 2xx.
func (m Meta) OK() bool { return m.Status >= 200 && m.Status < 300 }

// RequestID is the X-Request-ID response header.
func (m Meta) RequestID() string { return m.Headers.Get(HeaderRequestID) }

// ContentType is the response Content-Type.
func (m Meta) ContentType() string { return m.Headers.Get("Content-Type") }

// APIError decodes the body of a non-2xx response in any of the shapes
// OpenSandbox uses (CONTRACT §1.2, §2.1, §3.1). It returns nil for 2xx.
func (m Meta) APIError() *APIError {
	if m.OK() || m.Status == 0 {
		return nil
	}
	return ParseAPIError(m.Status, m.ContentType(), m.Body)
}

// Result is a decoded value together with the exchange's Meta. Value is set
// (and Decoded true) only for the success status of the call.
type Result[T any] struct {
	Meta
	Value   T
	Decoded bool
}

// Empty is the value of calls whose success has no body.
type Empty struct{}

// APIError is a normalised error body.
type APIError struct {
	Status int
	// Shape is "code_message" ({code,message}), "validation" (FastAPI 422
	// {detail:[...]}), "execd_auth" ({error}), "text" or "unknown".
	Shape   string
	Code    string
	Message string
	Detail  []ValidationDetail
	Raw     string
}

// ValidationDetail is one FastAPI validation error.
type ValidationDetail struct {
	Type  string          `json:"type"`
	Loc   []any           `json:"loc"`
	Msg   string          `json:"msg"`
	Input json.RawMessage `json:"input,omitempty"`
}

func (e *APIError) Error() string {
	switch {
	case e.Code != "":
		return e.Code + ": " + e.Message
	case len(e.Detail) > 0:
		return "validation: " + e.Detail[0].Msg
	case e.Message != "":
		return e.Message
	}
	return strings.TrimSpace(e.Raw)
}

// ParseAPIError classifies an error body.
func ParseAPIError(status int, contentType string, body []byte) *APIError {
	e := &APIError{Status: status, Shape: "unknown", Raw: string(body)}
	var probe map[string]json.RawMessage
	if json.Unmarshal(body, &probe) == nil && probe != nil {
		if _, ok := probe["code"]; ok {
			var cm wire.Error
			_ = json.Unmarshal(body, &cm)
			e.Shape, e.Code, e.Message = "code_message", cm.Code, cm.Message
			return e
		}
		if d, ok := probe["detail"]; ok {
			var det []ValidationDetail
			if json.Unmarshal(d, &det) == nil {
				e.Shape, e.Detail = "validation", det
				return e
			}
			var s string
			if json.Unmarshal(d, &s) == nil {
				e.Shape, e.Message = "validation", s
				return e
			}
		}
		if m, ok := probe["error"]; ok {
			var s string
			_ = json.Unmarshal(m, &s)
			e.Shape, e.Message = "execd_auth", s
			return e
		}
		return e
	}
	if strings.HasPrefix(contentType, "text/") || len(body) > 0 {
		e.Shape, e.Message = "text", strings.TrimSpace(string(body))
	}
	return e
}
