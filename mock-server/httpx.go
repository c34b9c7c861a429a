package mockserver

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// writeJSON replies status with v as JSON (wire.WriteJSON: a 500
// {code,message} if v cannot be encoded).
func writeJSON(w http.ResponseWriter, status int, v any) { wire.WriteJSON(w, status, v) }

// writeError writes the {code,message} service-error body (CONTRACT §1.2
// shape 1; wire.Error).
func writeError(w http.ResponseWriter, status int, code, msg string) {
	wire.WriteError(w, status, code, msg)
}

// validationItem is one FastAPI/pydantic request-validation error.
type validationItem struct {
	Type  string         `json:"type"`
	Loc   []any          `json:"loc"`
	Msg   string         `json:"msg"`
	Input any            `json:"input"`
	Ctx   map[string]any `json:"ctx,omitempty"`
}

// writeValidation writes FastAPI's default 422 body {"detail":[...]}.
func writeValidation(w http.ResponseWriter, items ...validationItem) {
	writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": items})
}

func vMissing(loc []any, input any) validationItem {
	return validationItem{Type: "missing", Loc: loc, Msg: "Field required", Input: input}
}

func vValue(loc []any, input any, msg string) validationItem {
	return validationItem{Type: "value_error", Loc: loc, Msg: "Value error, " + msg, Input: input,
		Ctx: map[string]any{"error": map[string]any{}}}
}

func vType(typ string, loc []any, input any, msg string) validationItem {
	return validationItem{Type: typ, Loc: loc, Msg: msg, Input: input}
}

func vGE(loc []any, input any, ge int) validationItem {
	return validationItem{Type: "greater_than_equal", Loc: loc, Input: input,
		Msg: "Input should be greater than or equal to " + itoa(ge), Ctx: map[string]any{"ge": ge}}
}

func vLE(loc []any, input any, le int) validationItem {
	return validationItem{Type: "less_than_equal", Loc: loc, Input: input,
		Msg: "Input should be less than or equal to " + itoa(le), Ctx: map[string]any{"le": le}}
}

func vIntParse(loc []any, input any) validationItem {
	return vType("int_parsing", loc, input, "Input should be a valid integer, unable to parse string as an integer")
}

// newRequestID is uuid4().hex: 32 lower-case hex characters, no dashes.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return hex.EncodeToString(b[:])
}

// newUUID is str(uuid4()), with dashes.
func newUUID() string {
	h := newRequestID()
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// newToken is like secrets.token_urlsafe(24): 32 URL-safe base64 characters.
func newToken() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Fingerprint is the first 12 hex characters of sha256(s) (wire.Fingerprint).
// It is what the audit trail stores instead of keys and env values.
func Fingerprint(s string) string { return wire.Fingerprint(s) }

// formatTime renders t as pydantic v2 does: RFC 3339 UTC with Z, microseconds
// only when non-zero.
func formatTime(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format("2006-01-02T15:04:05Z")
	}
	return t.Format("2006-01-02T15:04:05.000000Z")
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// jsonBody is FastAPI's reading of a JSON request body: without a
// Content-Type the body is parsed as JSON; with one, only application/json or
// application/*+json is; any other type (curl -d sends
// application/x-www-form-urlencoded, text/plain) leaves the body raw bytes,
// which the body model refuses: 422 model_attributes_type with the text as
// input. An empty body goes on to the handler (FastAPI: "Field required").
func jsonBody(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ct := r.Header.Get("Content-Type")
		if ct == "" || isJSONContentType(ct) {
			h(w, r)
			return
		}
		body := readBody(r)
		if len(body) == 0 {
			r.Body = io.NopCloser(bytes.NewReader(nil))
			h(w, r)
			return
		}
		writeValidation(w, vType("model_attributes_type", []any{"body"}, strings.ToValidUTF8(string(body), "\ufffd"),
			"Input should be a valid dictionary or object to extract fields from"))
	}
}

// isJSONContentType is FastAPI's test (email.message's content type: a value
// without exactly one "/" counts as text/plain): maintype application and
// subtype json or *+json, case-insensitive.
func isJSONContentType(ct string) bool {
	t, _, _ := strings.Cut(ct, ";")
	t = strings.ToLower(strings.TrimSpace(t))
	if strings.Count(t, "/") != 1 {
		return false
	}
	main, sub, _ := strings.Cut(t, "/")
	return main == "application" && (sub == "json" || strings.HasSuffix(sub, "+json"))
}
