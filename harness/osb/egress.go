package osb

import (
	"context"
	"net/url"
)

// Egress is a client for a sandbox's egress sidecar API (port 18080), reached
// through the endpoint returned for 18080; its headers (notably
// OPENSANDBOX-EGRESS-AUTH) go on every request. Egress errors are text/plain.
type Egress struct {
	c       *Client
	base    string
	headers map[string]string
}

// Egress returns a client for the egress endpoint ep (from GetEndpoint(…, 18080)).
func (c *Client) Egress(ep Endpoint) (*Egress, error) {
	if ep.Endpoint == "" {
		return nil, errNoEndpoint
	}
	base, err := baseURL(ep.Endpoint, c.scheme)
	if err != nil {
		return nil, err
	}
	for _, v := range ep.Headers {
		c.secrets.add(v)
	}
	return &Egress{c: c, base: base, headers: copyMap(ep.Headers)}, nil
}

// WithHeaders returns a copy that sends headers instead of the endpoint's
// (e.g. none, or a wrong token, for the 401 checks).
func (g *Egress) WithHeaders(h map[string]string) *Egress {
	cp := *g
	cp.headers = copyMap(h)
	return &cp
}

func (g *Egress) call(method, path string, q url.Values) call {
	return call{target: "egress", method: method, url: joinURL(g.base, path, q), headers: copyMap(g.headers)}
}

// PolicyStatus is the egress /policy response.
type PolicyStatus struct {
	Status          string         `json:"status"`
	Mode            string         `json:"mode,omitempty"`
	EnforcementMode string         `json:"enforcementMode,omitempty"`
	Reason          string         `json:"reason,omitempty"`
	Policy          *NetworkPolicy `json:"policy,omitempty"`
}

// Do sends a raw egress request (e.g. POST /policy, PATCH /credential-vault);
// the endpoint headers are sent, plus r.Headers.
func (g *Egress) Do(ctx context.Context, r RawRequest) (*Result[[]byte], error) {
	return g.c.doRaw(ctx, g.call(r.Method, r.Path, r.Query), r)
}

// Healthz calls GET /healthz (200 "ok").
func (g *Egress) Healthz(ctx context.Context) (*Result[Empty], error) {
	return doJSON[Empty](ctx, g.c, g.call("GET", "/healthz", nil), nil, false)
}

// GetPolicy calls GET /policy.
func (g *Egress) GetPolicy(ctx context.Context) (*Result[PolicyStatus], error) {
	return doJSON[PolicyStatus](ctx, g.c, g.call("GET", "/policy", nil), nil, true)
}

// PatchPolicy calls PATCH /policy with rules (prepended, first match wins).
func (g *Egress) PatchPolicy(ctx context.Context, rules []NetworkRule) (*Result[PolicyStatus], error) {
	if rules == nil {
		rules = []NetworkRule{}
	}
	return doJSON[PolicyStatus](ctx, g.c, g.call("PATCH", "/policy", nil), rules, true)
}

// DeletePolicy calls DELETE /policy with a list of targets to remove.
func (g *Egress) DeletePolicy(ctx context.Context, targets []string) (*Result[PolicyStatus], error) {
	if targets == nil {
		targets = []string{}
	}
	return doJSON[PolicyStatus](ctx, g.c, g.call("DELETE", "/policy", nil), targets, true)
}

// VaultCredential is one inline credential. Value is write-only: it is
// registered as a secret and never appears in a transcript.
type VaultCredential struct {
	Name   string             `json:"name"`
	Source VaultCredentialSrc `json:"source"`
}

// VaultCredentialSrc is {type:"inline", value}.
type VaultCredentialSrc struct {
	Type  string `json:"type,omitempty"`
	Value string `json:"value,omitempty"`
}

// VaultMatch selects requests a binding applies to.
type VaultMatch struct {
	Hosts   []string `json:"hosts"`
	Schemes []string `json:"schemes,omitempty"`
	Ports   []int    `json:"ports,omitempty"`
	Methods []string `json:"methods,omitempty"`
	Paths   []string `json:"paths,omitempty"`
}

// VaultHeader is one customHeaders entry.
type VaultHeader struct {
	Name       string `json:"name"`
	Credential string `json:"credential"`
}

// VaultAuth says how a credential is injected: type bearer | basic | apiKey | customHeaders.
type VaultAuth struct {
	Type       string        `json:"type"`
	Credential string        `json:"credential,omitempty"`
	Name       string        `json:"name,omitempty"`
	Headers    []VaultHeader `json:"headers,omitempty"`
}

// VaultBinding binds a credential to matching requests.
type VaultBinding struct {
	Name  string     `json:"name"`
	Match VaultMatch `json:"match"`
	Auth  VaultAuth  `json:"auth"`
}

// VaultCreate is POST /credential-vault.
type VaultCreate struct {
	Credentials []VaultCredential `json:"credentials"`
	Bindings    []VaultBinding    `json:"bindings"`
}

// VaultState is the sanitized vault state (secrets are never returned).
type VaultState struct {
	Revision    int64 `json:"revision"`
	Credentials []struct {
		Name       string `json:"name"`
		SourceType string `json:"sourceType,omitempty"`
		Revision   int64  `json:"revision,omitempty"`
	} `json:"credentials"`
	Bindings []struct {
		Name     string     `json:"name"`
		Revision int64      `json:"revision,omitempty"`
		Match    VaultMatch `json:"match"`
		Auth     struct {
			Type string `json:"type"`
			Name string `json:"name,omitempty"`
		} `json:"auth"`
	} `json:"bindings"`
}

// CreateVault calls POST /credential-vault (201). Credential values are
// registered as transcript secrets before the request is sent.
func (g *Egress) CreateVault(ctx context.Context, v VaultCreate) (*Result[VaultState], error) {
	for _, cr := range v.Credentials {
		g.c.secrets.add(cr.Source.Value)
	}
	return doJSON[VaultState](ctx, g.c, g.call("POST", "/credential-vault", nil), v, true)
}

// GetVault calls GET /credential-vault.
func (g *Egress) GetVault(ctx context.Context) (*Result[VaultState], error) {
	return doJSON[VaultState](ctx, g.c, g.call("GET", "/credential-vault", nil), nil, true)
}

// DeleteVault calls DELETE /credential-vault (204).
func (g *Egress) DeleteVault(ctx context.Context) (*Result[Empty], error) {
	return doJSON[Empty](ctx, g.c, g.call("DELETE", "/credential-vault", nil), nil, false)
}
