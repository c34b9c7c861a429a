// Package osb is the harness's own raw HTTP client for OpenSandbox: the
// lifecycle API (CONTRACT §1), execd (§2), the egress sidecar API (§3) and the
// bundled server's /_mock admin extension. It never hides a status code: every
// call returns a *Result carrying the HTTP status, status line, raw body and
// headers next to the decoded value, and returns an error only for transport
// failures or for a success body that does not decode. Every exchange can be
// recorded to a Transcript (the harness's evidence), with secrets redacted.
package osb

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// Header names used on the wire.
const (
	HeaderAPIKey      = "OPEN-SANDBOX-API-KEY"
	HeaderEgressAuth  = "OPENSANDBOX-EGRESS-AUTH"
	HeaderAdminToken  = "X-Mock-Admin-Token"
	HeaderRequestID   = "X-Request-ID"
	HeaderTailCursor  = "EXECD-COMMANDS-TAIL-CURSOR"
	HeaderExecdToken  = "X-EXECD-ACCESS-TOKEN"
	DefaultExecdPort  = 44772
	DefaultEgressPort = 18080
)

// DefaultMaxBody is how many bytes of a response body a Result keeps in Body.
// Larger bodies are cut and Result.BodyTruncated is set (a JSON body that is
// cut cannot be decoded and yields a decode error, never a silent success).
const DefaultMaxBody = 8 << 20

// Client talks to one OpenSandbox lifecycle server. It is safe for concurrent
// use. Create one with New.
type Client struct {
	base       string // scheme://host[:port][/path], no trailing slash, no /v1
	scheme     string // scheme used for execd/egress endpoints that carry none
	apiKey     string
	sendKey    bool
	adminToken string
	http       *http.Client
	transcript Transcript
	maxBody    int64
	secrets    *secretSet
}

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the underlying *http.Client (default: a client with no
// overall timeout; pass a context deadline per call instead, since SSE streams
// are long-lived).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithTranscript records every exchange to t.
func WithTranscript(t Transcript) Option { return func(c *Client) { c.transcript = t } }

// WithAdminToken sets the X-Mock-Admin-Token used by Admin().
func WithAdminToken(tok string) Option {
	return func(c *Client) { c.adminToken = tok; c.secrets.add(tok) }
}

// WithMaxBody sets how many response bytes a Result keeps (default DefaultMaxBody).
func WithMaxBody(n int64) Option { return func(c *Client) { c.maxBody = n } }

// WithProtocol sets the scheme used when the domain carries none (default "http").
func WithProtocol(p string) Option {
	return func(c *Client) { c.scheme = strings.TrimSuffix(p, "://") }
}

// WithSecrets registers extra values that must never appear in a transcript.
func WithSecrets(vals ...string) Option {
	return func(c *Client) {
		for _, v := range vals {
			c.secrets.add(v)
		}
	}
}

// New builds a client for domain, which is "host:port" as in
// OPEN_SANDBOX_DOMAIN (no scheme), optionally with a path; a scheme, if present,
// overrides the protocol and a trailing "/v1" is stripped, as the SDKs do
// (CONTRACT §5.1). apiKey is sent as OPEN-SANDBOX-API-KEY on lifecycle calls
// only (never to execd or egress); an empty key sends no header.
func New(domain, apiKey string, opts ...Option) (*Client, error) {
	c := &Client{
		scheme:  "http",
		apiKey:  apiKey,
		sendKey: apiKey != "",
		http:    &http.Client{},
		maxBody: DefaultMaxBody,
		secrets: &secretSet{},
	}
	c.secrets.add(apiKey)
	for _, o := range opts {
		o(c)
	}
	base, err := baseURL(domain, c.scheme)
	if err != nil {
		return nil, err
	}
	base = strings.TrimSuffix(base, "/v1")
	c.base = base
	if u, _ := url.Parse(base); u != nil && u.Scheme != "" {
		c.scheme = u.Scheme
	}
	return c, nil
}

// BaseURL is the server root (without /v1).
func (c *Client) BaseURL() string { return c.base }

// WithAPIKey returns a copy of c that sends key instead (an empty key sends no
// header at all), sharing transport and transcript. Used for the 401 checks.
func (c *Client) WithAPIKey(key string) *Client {
	cp := *c
	cp.apiKey = key
	cp.sendKey = key != ""
	c.secrets.add(key)
	return &cp
}

// WithoutAPIKey returns a copy of c that sends no OPEN-SANDBOX-API-KEY header.
func (c *Client) WithoutAPIKey() *Client { return c.WithAPIKey("") }

// AddSecret registers a value that must be redacted from transcripts.
func (c *Client) AddSecret(v string) { c.secrets.add(v) }

// baseURL turns an endpoint or domain ("host:port[/path]" or with a scheme)
// into "scheme://host:port[/path]" without a trailing slash.
func baseURL(endpoint, scheme string) (string, error) {
	e := strings.TrimSpace(endpoint)
	if e == "" {
		return "", errors.New("osb: empty domain/endpoint")
	}
	if !strings.Contains(e, "://") {
		e = scheme + "://" + e
	}
	u, err := url.Parse(e)
	if err != nil {
		return "", fmt.Errorf("osb: bad domain/endpoint %q: %w", endpoint, err)
	}
	if u.Host == "" {
		return "", fmt.Errorf("osb: domain/endpoint %q has no host", endpoint)
	}
	return strings.TrimRight(e, "/"), nil
}

// secretSet holds values to redact from transcripts.
type secretSet struct {
	mu   sync.RWMutex
	vals []string
}

func (s *secretSet) add(v string) {
	if len(v) < 4 { // too short to redact meaningfully without mangling text
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.vals {
		if x == v {
			return
		}
	}
	s.vals = append(s.vals, v)
}

func (s *secretSet) redact(text string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, v := range s.vals {
		if strings.Contains(text, v) {
			text = strings.ReplaceAll(text, v, "[REDACTED]")
		}
	}
	return text
}
