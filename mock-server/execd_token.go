package mockserver

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// headerExecdToken is execd's access-token header (CONTRACT §2.1): execd
// started with EXECD_ACCESS_TOKEN answers every request without it, or with
// another value, 401.
const headerExecdToken = "X-EXECD-ACCESS-TOKEN"

// execdUnauthorized is upstream execd's 401 body (its access-token
// middleware: a gin JSON answer, compact, no newline).
const execdUnauthorized = "Unauthorized: invalid or missing header " + headerExecdToken

// ExecdTokenMode says when the bundled server gives each sandbox's execd an
// access token of its own (BundledConfig.ExecdAccessToken).
type ExecdTokenMode string

const (
	// ExecdTokenAuto (the zero value): a token when the runtime gives the
	// sandboxes no network namespace (insecure mode), where any process of
	// the machine reaches every loopback port; none otherwise, as 1.1.1.
	ExecdTokenAuto ExecdTokenMode = ""
	// ExecdTokenOn: a token for every sandbox, whatever the runtime. The
	// grader asks for it below confinement level full: there the
	// submissions' commands share the server's loopback, namespaced
	// sandboxes or not (the execd ports are the server's, on the host).
	ExecdTokenOn ExecdTokenMode = "on"
	// ExecdTokenOff: never, as 1.1.1 (its server never sets EXECD_ACCESS_TOKEN).
	ExecdTokenOff ExecdTokenMode = "off"
)

// ParseExecdTokenMode reads serve-mock's --execd-access-token (auto, on, off).
func ParseExecdTokenMode(s string) (ExecdTokenMode, bool) {
	switch s {
	case "", "auto":
		return ExecdTokenAuto, true
	case "on":
		return ExecdTokenOn, true
	case "off":
		return ExecdTokenOff, true
	}
	return "", false
}

// enabled says whether a server on a runtime that does (network) or does
// not give each sandbox a network namespace gives tokens.
func (m ExecdTokenMode) enabled(network bool) bool {
	switch m {
	case ExecdTokenOn:
		return true
	case ExecdTokenOff:
		return false
	}
	return !network
}

// newExecdToken is a sandbox's execd access token: 24 random bytes,
// URL-safe base64 (as secrets.token_urlsafe(24), 1.1.1's egress token).
func newExecdToken() string {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("mockserver: no randomness for an execd access token: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// authorize is execd's access-token check, ahead of everything execd
// serves (/ping, /proxy/… and unknown paths too: upstream's middleware
// order is log, metrics, auth, proxy). Without a token it lets everything
// through; otherwise a request without the header or with another value is
// answered as upstream execd answers it, and false returned. Nothing of
// such a request reaches the sandbox or the audit's command and file
// records (it never reached execd).
func (e *execdEndpoint) authorize(w http.ResponseWriter, r *http.Request) bool {
	if e.token == "" {
		return true
	}
	got := r.Header.Get(headerExecdToken)
	if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(e.token)) == 1 {
		return true
	}
	wire.JSONReply{ContentType: "application/json; charset=utf-8"}.Write(w, http.StatusUnauthorized,
		map[string]string{"error": execdUnauthorized})
	return false
}
