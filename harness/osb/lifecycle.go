package osb

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"time"
)

// ImageSpec is the create request's image.
type ImageSpec struct {
	URI  string     `json:"uri"`
	Auth *ImageAuth `json:"auth,omitempty"`
}

// ImageAuth is registry credentials for an image.
type ImageAuth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// Platform is {os, arch}.
type Platform struct {
	OS   string `json:"os,omitempty"`
	Arch string `json:"arch,omitempty"`
}

// NetworkRule is one egress rule.
type NetworkRule struct {
	Action string `json:"action"`
	Target string `json:"target"`
}

// NetworkPolicy is {defaultAction, egress}.
type NetworkPolicy struct {
	DefaultAction string        `json:"defaultAction,omitempty"`
	Egress        []NetworkRule `json:"egress,omitempty"`
}

// CredentialProxy switches on the egress sidecar's credential injection.
type CredentialProxy struct {
	Enabled bool `json:"enabled"`
}

// CreateSandboxRequest is POST /v1/sandboxes (CONTRACT §1.4). Timeout is in
// seconds; nil omits it (manual cleanup). Send deliberately malformed bodies
// with Client.Do.
type CreateSandboxRequest struct {
	Image           *ImageSpec        `json:"image,omitempty"`
	SnapshotID      string            `json:"snapshotId,omitempty"`
	Entrypoint      []string          `json:"entrypoint,omitempty"`
	Timeout         *int              `json:"timeout,omitempty"`
	ResourceLimits  map[string]string `json:"resourceLimits,omitempty"`
	Env             map[string]string `json:"env,omitempty"`
	Metadata        map[string]string `json:"metadata,omitempty"`
	Platform        *Platform         `json:"platform,omitempty"`
	NetworkPolicy   *NetworkPolicy    `json:"networkPolicy,omitempty"`
	CredentialProxy *CredentialProxy  `json:"credentialProxy,omitempty"`
	Extensions      map[string]string `json:"extensions,omitempty"`
}

// SandboxStatus is a sandbox's status.
type SandboxStatus struct {
	State            string `json:"state"`
	Reason           string `json:"reason,omitempty"`
	Message          string `json:"message,omitempty"`
	LastTransitionAt string `json:"lastTransitionAt,omitempty"`
}

// Sandbox is the Sandbox object (also the create response, which lacks image).
// Timestamps are kept as the raw strings the server sent.
type Sandbox struct {
	ID         string            `json:"id"`
	Status     SandboxStatus     `json:"status"`
	CreatedAt  string            `json:"createdAt"`
	Entrypoint []string          `json:"entrypoint"`
	Image      *ImageSpec        `json:"image,omitempty"`
	SnapshotID string            `json:"snapshotId,omitempty"`
	Platform   *Platform         `json:"platform,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	ExpiresAt  *string           `json:"expiresAt,omitempty"`
}

// Pagination is the list pagination block.
type Pagination struct {
	Page        int  `json:"page"`
	PageSize    int  `json:"pageSize"`
	TotalItems  int  `json:"totalItems"`
	TotalPages  int  `json:"totalPages"`
	HasNextPage bool `json:"hasNextPage"`
}

// SandboxList is GET /v1/sandboxes.
type SandboxList struct {
	Items      []Sandbox  `json:"items"`
	Pagination Pagination `json:"pagination"`
}

// ListOptions filters GET /v1/sandboxes. Metadata is encoded as the single
// `metadata=k=v&k2=v2` parameter (CONTRACT §1.7). Zero Page/PageSize are omitted.
type ListOptions struct {
	States   []string
	Metadata map[string]string
	Page     int
	PageSize int
}

// Endpoint is GET /v1/sandboxes/{id}/endpoints/{port}: a scheme-less
// "host:port[/path]" plus headers to send on every request to it.
type Endpoint struct {
	Endpoint string            `json:"endpoint"`
	Headers  map[string]string `json:"headers,omitempty"`
}

// RenewResponse is the renew-expiration body.
type RenewResponse struct {
	ExpiresAt string `json:"expiresAt"`
}

// Health is GET /health.
type Health struct {
	Status string `json:"status"`
}

func (c *Client) lc(method, path string, q url.Values) call {
	h := map[string]string{}
	if c.sendKey {
		h[HeaderAPIKey] = c.apiKey
	}
	return call{target: "lifecycle", method: method, url: joinURL(c.base, path, q), headers: h}
}

// Health calls GET /health (no /v1, no key needed).
func (c *Client) Health(ctx context.Context) (*Result[Health], error) {
	return doJSON[Health](ctx, c, c.lc("GET", "/health", nil), nil, true)
}

// CreateSandbox calls POST /v1/sandboxes; success is 202 with the sandbox.
func (c *Client) CreateSandbox(ctx context.Context, req CreateSandboxRequest) (*Result[Sandbox], error) {
	return doJSON[Sandbox](ctx, c, c.lc("POST", "/v1/sandboxes", nil), req, true)
}

// GetSandbox calls GET /v1/sandboxes/{id}.
func (c *Client) GetSandbox(ctx context.Context, id string) (*Result[Sandbox], error) {
	return doJSON[Sandbox](ctx, c, c.lc("GET", "/v1/sandboxes/"+url.PathEscape(id), nil), nil, true)
}

// ListSandboxes calls GET /v1/sandboxes.
func (c *Client) ListSandboxes(ctx context.Context, o ListOptions) (*Result[SandboxList], error) {
	q := url.Values{}
	for _, s := range o.States {
		q.Add("state", s)
	}
	if len(o.Metadata) > 0 {
		var parts []string
		for _, k := range sortedKeys(o.Metadata) {
			parts = append(parts, k+"="+o.Metadata[k])
		}
		q.Set("metadata", strings.Join(parts, "&"))
	}
	if o.Page != 0 {
		q.Set("page", itoa(o.Page))
	}
	if o.PageSize != 0 {
		q.Set("pageSize", itoa(o.PageSize))
	}
	return doJSON[SandboxList](ctx, c, c.lc("GET", "/v1/sandboxes", q), nil, true)
}

// DeleteSandbox calls DELETE /v1/sandboxes/{id}; success is 204.
func (c *Client) DeleteSandbox(ctx context.Context, id string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, c, c.lc("DELETE", "/v1/sandboxes/"+url.PathEscape(id), nil), nil, false)
}

// PauseSandbox calls POST /v1/sandboxes/{id}/pause; success is 202, empty.
func (c *Client) PauseSandbox(ctx context.Context, id string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, c, c.lc("POST", "/v1/sandboxes/"+url.PathEscape(id)+"/pause", nil), nil, false)
}

// ResumeSandbox calls POST /v1/sandboxes/{id}/resume; success is 202, empty.
func (c *Client) ResumeSandbox(ctx context.Context, id string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, c, c.lc("POST", "/v1/sandboxes/"+url.PathEscape(id)+"/resume", nil), nil, false)
}

// RenewExpiration calls POST /v1/sandboxes/{id}/renew-expiration with an
// absolute time (the SDKs compute now+d on the client).
func (c *Client) RenewExpiration(ctx context.Context, id string, expiresAt time.Time) (*Result[RenewResponse], error) {
	body := map[string]string{"expiresAt": expiresAt.UTC().Format(time.RFC3339Nano)}
	return doJSON[RenewResponse](ctx, c, c.lc("POST", "/v1/sandboxes/"+url.PathEscape(id)+"/renew-expiration", nil), body, true)
}

// PatchMetadata calls PATCH /v1/sandboxes/{id}/metadata (RFC 7396 merge
// patch: a nil value deletes the key).
func (c *Client) PatchMetadata(ctx context.Context, id string, patch map[string]*string) (*Result[Sandbox], error) {
	if patch == nil {
		patch = map[string]*string{}
	}
	return doJSON[Sandbox](ctx, c, c.lc("PATCH", "/v1/sandboxes/"+url.PathEscape(id)+"/metadata", nil), patch, true)
}

// GetEndpoint calls GET /v1/sandboxes/{id}/endpoints/{port}?use_server_proxy=…
func (c *Client) GetEndpoint(ctx context.Context, id string, port int, useServerProxy bool) (*Result[Endpoint], error) {
	q := url.Values{"use_server_proxy": {boolStr(useServerProxy)}}
	cl := c.lc("GET", "/v1/sandboxes/"+url.PathEscape(id)+"/endpoints/"+itoa(port), q)
	cl.inspect = func(body []byte) {
		var ep Endpoint
		if json.Unmarshal(body, &ep) == nil {
			for _, v := range ep.Headers {
				c.secrets.add(v)
			}
		}
	}
	return doJSON[Endpoint](ctx, c, cl, nil, true)
}

// RawRequest is an arbitrary request for Client.Do: bodies the typed methods
// cannot express (invalid shapes, explicit nulls) or routes they lack.
type RawRequest struct {
	Method string
	// Path is appended to the base URL: the server root for Client.Do (e.g.
	// "/v1/sandboxes", "/health"), the endpoint for Execd.Do and Egress.Do
	// (e.g. "/files/search", "/policy").
	Path  string
	Query url.Values
	// Body, if non-nil, is sent as is with ContentType (default application/json).
	Body        []byte
	ContentType string
	Headers     map[string]string
	// NoAPIKey suppresses the client's API key for this request (lifecycle only).
	NoAPIKey bool
}

// Do sends a raw lifecycle request and returns the body undecoded.
func (c *Client) Do(ctx context.Context, r RawRequest) (*Result[[]byte], error) {
	cl := c.lc(r.Method, r.Path, r.Query)
	if r.NoAPIKey {
		delete(cl.headers, HeaderAPIKey)
	}
	return c.doRaw(ctx, cl, r)
}

// doRaw sends r on top of the prepared call (target, URL, default headers).
func (c *Client) doRaw(ctx context.Context, cl call, r RawRequest) (*Result[[]byte], error) {
	for k, v := range r.Headers {
		cl.headers[k] = v
	}
	if r.Body != nil {
		cl.bodyBytes = r.Body
		cl.contentType = r.ContentType
		if cl.contentType == "" {
			cl.contentType = "application/json"
		}
	}
	m, err := c.do(ctx, cl)
	res := &Result[[]byte]{Meta: m, Value: m.Body, Decoded: err == nil && m.Status != 0}
	return res, err
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
