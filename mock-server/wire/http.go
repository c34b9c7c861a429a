package wire

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// encodeFailed is the body sent when a reply cannot be encoded (a server bug,
// never a client mistake): the lifecycle API's {code,message} error shape.
const encodeFailed = `{"code":"GENERAL::UNKNOWN_ERROR","message":"response encoding failed"}`

// WriteJSON replies status with v as JSON (Content-Type application/json). A
// json.RawMessage is sent as given. If v cannot be encoded the reply is a 500
// with a {code,message} body instead.
func WriteJSON(w http.ResponseWriter, status int, v any) { JSONReply{}.Write(w, status, v) }

// JSONReply is how a server writes its JSON replies where they differ from
// WriteJSON's on the wire. The zero value writes as WriteJSON does.
type JSONReply struct {
	// ContentType replaces "application/json" (execd, a gin server, sends
	// "application/json; charset=utf-8").
	ContentType string
	// Newline ends the body with "\n", as json.Encoder writes it (the egress
	// sidecar's replies).
	Newline bool
	// EncodeFailed replaces the {code,message} body of the 500 sent when v
	// cannot be encoded.
	EncodeFailed string
}

// Write replies status with v as JSON, as o says; the body is one write. If v
// cannot be encoded the reply is a 500 with o's encode-failed body instead.
func (o JSONReply) Write(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(encodeFailed)
		if o.EncodeFailed != "" {
			b = []byte(o.EncodeFailed)
		}
	}
	if o.Newline {
		b = append(b, '\n')
	}
	ct := o.ContentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// StatusRecorder passes writes and flushes through to the ResponseWriter and
// remembers the status sent and the body bytes written.
type StatusRecorder struct {
	http.ResponseWriter
	Status int   // the first status written; 0 before any
	Bytes  int64 // body bytes written
}

// WriteHeader records the first status and passes it on.
// An interim 1xx (100 Continue, 103 Early Hints; not 101) is passed on and not
// recorded: the final status is still to come.
func (r *StatusRecorder) WriteHeader(code int) {
	if r.Status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		r.Status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

// Write counts the bytes (an implicit 200 when no status was written).
func (r *StatusRecorder) Write(b []byte) (int, error) {
	if r.Status == 0 {
		r.Status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.Bytes += int64(n)
	return n, err
}

// Flush passes a flush through when the underlying writer supports it.
func (r *StatusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *StatusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Code is the status the client got: 200 when the handler wrote nothing.
func (r *StatusRecorder) Code() int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// Error is the {code,message} error body of the lifecycle API and execd
// (OpenSandbox's service-error shape, e.g. "SANDBOX::INVALID_PARAMETER").
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// WriteError replies status with an Error body.
func WriteError(w http.ResponseWriter, status int, code, msg string) {
	WriteJSON(w, status, Error{Code: code, Message: msg})
}

// OpenSandbox 1.1.1's answer to a create when a Kubernetes pool has no
// capacity (services/k8s/kubernetes_service.py: a poolRef create that finds
// none before the acquisition timeout): 429 with this code and message and a
// Retry-After in seconds. Docker has no pools and never sends it. Drill D3
// simulates it: the bundled server's capacity fault, and on a real target
// the harness's recording proxy (harness/observe), with WriteCapacityExhausted
// both, so the two answer byte for byte alike.
const (
	CapacityExhaustedCode    = "KUBERNETES::POOL_CAPACITY_EXHAUSTED"
	CapacityExhaustedMessage = "No Pool capacity became available before the acquisition timeout."
)

// WriteCapacityExhausted answers 429 KUBERNETES::POOL_CAPACITY_EXHAUSTED with
// Retry-After: retryAfterSeconds.
func WriteCapacityExhausted(w http.ResponseWriter, retryAfterSeconds int) {
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	WriteError(w, http.StatusTooManyRequests, CapacityExhaustedCode, CapacityExhaustedMessage)
}
