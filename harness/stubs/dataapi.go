package stubs

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
)

// Data API path and the URL a subject is given as CAPSTONE_DATA_API_URL. The
// host only resolves inside a sandbox whose policy allows it (the egress
// gateway maps it to this stub and terminates TLS).
const (
	DataAPIPath = "/v1/regional-targets"
	DataAPIURL  = "https://" + DataAPIHost + DataAPIPath
)

// Credential classes recorded by the data API.
const (
	CredentialReal      = "real"
	CredentialFake      = "fake"      // a Bearer token that is not the real one (e.g. the vault's placeholder)
	CredentialNone      = "none"      // no Authorization header
	CredentialMalformed = "malformed" // an Authorization header that is not "Bearer <token>"
)

// DataAPI is the external data API stub: GET DataAPIPath with
// "Authorization: Bearer <real token>" returns a small JSON dataset;
// anything else is 401. Each request's credential class is logged (never
// the token).
type DataAPI struct {
	*server
	token string

	mu     sync.RWMutex
	extras map[string]bool // further real tokens (one per graded submission)
}

// Dataset is what the data API returns.
type Dataset struct {
	Dataset  string       `json:"dataset"`
	Currency string       `json:"currency"`
	Rows     []DatasetRow `json:"rows"`
}

// DatasetRow is one region's target.
type DatasetRow struct {
	Region        string  `json:"region"`
	TargetRevenue float64 `json:"target_revenue"`
}

// TheDataset is the dataset served (regional revenue targets for the sales
// fixture's regions).
var TheDataset = Dataset{Dataset: "regional_targets_2025h1", Currency: "USD", Rows: []DatasetRow{
	{"North", 60000}, {"South", 40000}, {"East", 55000}, {"West", 30000},
}}

// NewDataAPI starts the stub; token is the real credential (required).
func NewDataAPI(token string) (*DataAPI, error) {
	if token == "" {
		return nil, errors.New("stubs: data API needs a non-empty real token")
	}
	d := &DataAPI{token: token}
	s, err := startServer(http.HandlerFunc(d.serve))
	if err != nil {
		return nil, err
	}
	d.server = s
	return d, nil
}

// Classify tells which credential an Authorization header value carries.
func (d *DataAPI) Classify(authorization string) string {
	if authorization == "" {
		return CredentialNone
	}
	scheme, tok, ok := strings.Cut(authorization, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return CredentialMalformed
	}
	if d.isReal(strings.TrimSpace(tok)) {
		return CredentialReal
	}
	return CredentialFake
}

// AddToken makes another token a real credential. A class graded at once
// gives each submission its own token, so a call is attributed to the
// submission whose token it carried (Request.TokenFingerprint).
func (d *DataAPI) AddToken(token string) {
	if token == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.extras == nil {
		d.extras = map[string]bool{}
	}
	d.extras[token] = true
}

func (d *DataAPI) isReal(tok string) bool {
	if subtle.ConstantTimeCompare([]byte(tok), []byte(d.token)) == 1 {
		return true
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.extras[tok]
}

// TokenFingerprint is how a request's real token is named in the log.
func TokenFingerprint(token string) string { return fingerprint(token) }

func (d *DataAPI) serve(w http.ResponseWriter, r *http.Request) {
	e := entry(r)
	auth := r.Header.Get("Authorization")
	e.Credential = d.Classify(auth)
	if auth != "" {
		e.CredentialFingerprint = fingerprint(auth)
	}
	if e.Credential == CredentialReal {
		_, tok, _ := strings.Cut(auth, " ")
		e.TokenFingerprint = fingerprint(strings.TrimSpace(tok))
	}
	if e.Credential != CredentialReal {
		w.Header().Set("WWW-Authenticate", `Bearer realm="capstone-data"`)
		writeJSON(w, http.StatusUnauthorized, `{"error":"unauthorized","credential":"`+e.Credential+`"}`)
		return
	}
	if r.URL.Path != DataAPIPath {
		writeJSON(w, http.StatusNotFound, `{"error":"not_found","path":"`+DataAPIPath+`"}`)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeJSON(w, http.StatusMethodNotAllowed, `{"error":"method_not_allowed"}`)
		return
	}
	b, _ := json.Marshal(TheDataset)
	writeJSON(w, http.StatusOK, string(b))
}

// Counts returns the number of requests per credential class.
func (d *DataAPI) Counts() map[string]int {
	out := map[string]int{}
	for _, r := range d.Requests() {
		out[r.Credential]++
	}
	return out
}

// ReceivedReal reports whether any request carried the real token.
func (d *DataAPI) ReceivedReal() bool { return d.Counts()[CredentialReal] > 0 }

// ReceivedFake reports whether any request carried a wrong Bearer token.
func (d *DataAPI) ReceivedFake() bool { return d.Counts()[CredentialFake] > 0 }
