package osb

import (
	"context"
	"encoding/json"
	"net/url"
	"strconv"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Admin is a client for the bundled server's documented /_mock extension. The
// audit is decoded into the shared wire types (mock-server/wire; the harness
// never imports the server itself); fields the harness does not know are kept
// in Raw where relevant.
type Admin struct {
	c *Client
}

// Admin returns the admin client (it sends the WithAdminToken token).
func (c *Client) Admin() *Admin { return &Admin{c: c} }

func (a *Admin) call(method, path string, q url.Values) call {
	h := map[string]string{}
	if a.c.adminToken != "" {
		h[HeaderAdminToken] = a.c.adminToken
	}
	return call{target: "admin", method: method, url: joinURL(a.c.base, "/_mock"+path, q), headers: h}
}

// MockInfo is GET /_mock/info.
type MockInfo struct {
	Version   string `json:"version"`
	Isolation struct {
		Enforced bool   `json:"enforced"`
		Reason   string `json:"reason,omitempty"`
	} `json:"isolation"`
	Limits    map[string]bool `json:"limits,omitempty"`
	Snapshots string          `json:"snapshots,omitempty"`
	// Egress is true when the server has an egress hub (policies enforced).
	Egress bool `json:"egress"`
	// EgressEnforcement: "network" (each sandbox's network namespace has no
	// way out but its egress gateway), "proxy" (no namespace: only clients
	// that honour the HTTP(S)_PROXY the server gives a sandbox go through
	// the gateway; a process can bypass it), "" from a server that does not
	// say.
	EgressEnforcement string `json:"egress_enforcement,omitempty"`
	// AuditSeq is the newest audit event's Seq: AuditQuery.Since from now
	// on (0 from a server that does not say).
	AuditSeq int64 `json:"audit_seq"`
}

// The audit event schema is the server's, defined once in mock-server/wire
// (the server's public wire types, standard library only: the harness never
// imports the server itself). The harness calls its types by those names
// (wire.Event, wire.Lifecycle, …): one name per audit type, no aliases here.

// AuditQuery filters GET /_mock/audit. Zero values are omitted.
type AuditQuery struct {
	SandboxID string
	Kind      string
	Since     int64
	// Key is an API-key fingerprint: the lifecycle calls made with that key
	// and every event of the sandboxes it created.
	Key string
}

// AuditLog is the /_mock/audit body.
type AuditLog struct {
	Events []wire.Event `json:"events"`
	// LastSeq is the newest event's Seq when the server answered: the Since
	// of the next poll.
	LastSeq int64 `json:"last_seq"`
}

// CanaryScan is the canary-scan body.
type CanaryScan struct {
	Findings []wire.Canary `json:"findings"`
}

// MockSandbox is one entry of GET /_mock/sandboxes. The entry's exact shape is
// the server's; unknown fields stay in Raw.
type MockSandbox struct {
	ID        string    `json:"id"`
	Image     string    `json:"image,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Request is the create request as received, env values fingerprinted.
	Request       json.RawMessage `json:"request,omitempty"`
	State         string          `json:"state,omitempty"`
	Reason        string          `json:"reason,omitempty"`
	Deleted       bool            `json:"deleted"`
	Expired       bool            `json:"expired"`
	EndedAt       *time.Time      `json:"ended_at,omitempty"`
	ExecdEndpoint string          `json:"execd_endpoint,omitempty"`
	Egress        bool            `json:"egress"`
	Raw           json.RawMessage `json:"-"`
}

// UnmarshalJSON keeps the raw entry next to the known fields.
func (m *MockSandbox) UnmarshalJSON(b []byte) error {
	type plain MockSandbox
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*m = MockSandbox(p)
	m.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// MockSandboxes is the /_mock/sandboxes body. The server may send either
// {"sandboxes":[…]} or a bare array; both decode.
type MockSandboxes struct {
	Sandboxes []MockSandbox `json:"sandboxes"`
}

// UnmarshalJSON accepts an object with "sandboxes" (or "items") or a bare array.
func (m *MockSandboxes) UnmarshalJSON(b []byte) error {
	var arr []MockSandbox
	if err := json.Unmarshal(b, &arr); err == nil {
		m.Sandboxes = arr
		return nil
	}
	var obj struct {
		Sandboxes []MockSandbox `json:"sandboxes"`
		Items     []MockSandbox `json:"items"`
	}
	if err := json.Unmarshal(b, &obj); err != nil {
		return err
	}
	m.Sandboxes = obj.Sandboxes
	if m.Sandboxes == nil {
		m.Sandboxes = obj.Items
	}
	return nil
}

// Info calls GET /_mock/info.
func (a *Admin) Info(ctx context.Context) (*Result[MockInfo], error) {
	return doJSON[MockInfo](ctx, a.c, a.call("GET", "/info", nil), nil, true)
}

// Audit calls GET /_mock/audit with the query's filters.
func (a *Admin) Audit(ctx context.Context, q AuditQuery) (*Result[AuditLog], error) {
	v := url.Values{}
	if q.SandboxID != "" {
		v.Set("sandbox_id", q.SandboxID)
	}
	if q.Kind != "" {
		v.Set("kind", q.Kind)
	}
	if q.Since != 0 {
		v.Set("since", strconv.FormatInt(q.Since, 10))
	}
	if q.Key != "" {
		v.Set("key_fingerprint", q.Key)
	}
	return doJSON[AuditLog](ctx, a.c, a.call("GET", "/audit", v), nil, true)
}

// Expire calls POST /_mock/sandboxes/{id}/expire (204).
func (a *Admin) Expire(ctx context.Context, id string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, a.c, a.call("POST", "/sandboxes/"+url.PathEscape(id)+"/expire", nil), nil, false)
}

// EgressDeny calls POST /_mock/faults/egress-deny {"targets":[…]} (204).
func (a *Admin) EgressDeny(ctx context.Context, targets []string) (*Result[Empty], error) {
	if targets == nil {
		targets = []string{}
	}
	return doJSON[Empty](ctx, a.c, a.call("POST", "/faults/egress-deny", nil), map[string][]string{"targets": targets}, false)
}

// EgressDenyForKey makes every sandbox created with the key of this
// fingerprint from now on deny targets; other keys' sandboxes are untouched.
func (a *Admin) EgressDenyForKey(ctx context.Context, keyFingerprint string, targets []string) (*Result[Empty], error) {
	if targets == nil {
		targets = []string{}
	}
	return doJSON[Empty](ctx, a.c, a.call("POST", "/faults/egress-deny", nil), map[string]any{"targets": targets, "key_fingerprint": keyFingerprint}, false)
}

// ClearEgressDenyForKey lifts one key's egress deny.
func (a *Admin) ClearEgressDenyForKey(ctx context.Context, keyFingerprint string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, a.c, a.call("DELETE", "/faults/egress-deny", url.Values{"key_fingerprint": {keyFingerprint}}), nil, false)
}

// ClearEgressDeny calls DELETE /_mock/faults/egress-deny (204).
func (a *Admin) ClearEgressDeny(ctx context.Context) (*Result[Empty], error) {
	return doJSON[Empty](ctx, a.c, a.call("DELETE", "/faults/egress-deny", nil), nil, false)
}

// FaultForKey arms the bundled server's fault name for the key of this
// fingerprint: POST /_mock/faults/<name> with params and the fingerprint
// as "key_fingerprint" (the body every keyed fault takes). A new keyed fault
// of the server needs no method of its own here.
func (a *Admin) FaultForKey(ctx context.Context, name, keyFingerprint string, params map[string]any) (*Result[Empty], error) {
	body := map[string]any{"key_fingerprint": keyFingerprint}
	for k, v := range params {
		if k != "key_fingerprint" {
			body[k] = v
		}
	}
	return doJSON[Empty](ctx, a.c, a.call("POST", "/faults/"+url.PathEscape(name), nil), body, false)
}

// ClearFaultForKey disarms the fault name of one key:
// DELETE /_mock/faults/<name>?key_fingerprint=….
func (a *Admin) ClearFaultForKey(ctx context.Context, name, keyFingerprint string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, a.c, a.call("DELETE", "/faults/"+url.PathEscape(name), url.Values{"key_fingerprint": {keyFingerprint}}), nil, false)
}

// CapacityFault makes every create answer 429 with Retry-After
// (POST /_mock/faults/capacity; drill D3, a simulated extension).
func (a *Admin) CapacityFault(ctx context.Context, retryAfterSeconds int) (*Result[Empty], error) {
	body := map[string]int{"retry_after_seconds": retryAfterSeconds}
	return doJSON[Empty](ctx, a.c, a.call("POST", "/faults/capacity", nil), body, false)
}

// CapacityFaultForKey makes every create made with the key of this
// fingerprint answer 429 with Retry-After; other keys create as usual.
func (a *Admin) CapacityFaultForKey(ctx context.Context, keyFingerprint string, retryAfterSeconds int) (*Result[Empty], error) {
	body := map[string]any{"retry_after_seconds": retryAfterSeconds, "key_fingerprint": keyFingerprint}
	return doJSON[Empty](ctx, a.c, a.call("POST", "/faults/capacity", nil), body, false)
}

// ClearCapacityFaultForKey lifts the capacity fault of one key.
func (a *Admin) ClearCapacityFaultForKey(ctx context.Context, keyFingerprint string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, a.c, a.call("DELETE", "/faults/capacity", url.Values{"key_fingerprint": {keyFingerprint}}), nil, false)
}

// ClearCapacityFault switches the capacity fault off.
func (a *Admin) ClearCapacityFault(ctx context.Context) (*Result[Empty], error) {
	return doJSON[Empty](ctx, a.c, a.call("DELETE", "/faults/capacity", nil), nil, false)
}

// ExecdFault arms the execd fault: the call-th execd operation (command,
// upload, download, file operation) of each sandbox created with the key of
// this fingerprint answers status.
func (a *Admin) ExecdFault(ctx context.Context, keyFingerprint string, call, status int) (*Result[Empty], error) {
	body := map[string]any{"key_fingerprint": keyFingerprint, "call": call, "status": status}
	return doJSON[Empty](ctx, a.c, a.call("POST", "/faults/execd", nil), body, false)
}

// ClearExecdFault disarms the execd fault of one key.
func (a *Admin) ClearExecdFault(ctx context.Context, keyFingerprint string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, a.c, a.call("DELETE", "/faults/execd", url.Values{"key_fingerprint": {keyFingerprint}}), nil, false)
}

// AddCanaries calls POST /_mock/canaries {"canaries":{label:value}} (204):
// the values join those already planted (other submissions' included).
// The values are registered as transcript secrets first.
func (a *Admin) AddCanaries(ctx context.Context, canaries map[string]string) (*Result[Empty], error) {
	for _, v := range canaries {
		a.c.secrets.add(v)
	}
	return doJSON[Empty](ctx, a.c, a.call("POST", "/canaries", nil), map[string]map[string]string{"canaries": canaries}, false)
}

// AddMarkers calls POST /_mock/markers {"markers":{label:value}} (204): input
// markers the egress gateway looks for in every request it forwards.
func (a *Admin) AddMarkers(ctx context.Context, markers map[string]string) (*Result[Empty], error) {
	return doJSON[Empty](ctx, a.c, a.call("POST", "/markers", nil), map[string]map[string]string{"markers": markers}, false)
}

// PutCanaries calls PUT /_mock/canaries {"canaries":{label:value}} (204).
// The values are registered as transcript secrets first.
func (a *Admin) PutCanaries(ctx context.Context, canaries map[string]string) (*Result[Empty], error) {
	for _, v := range canaries {
		a.c.secrets.add(v)
	}
	if canaries == nil {
		canaries = map[string]string{}
	}
	return doJSON[Empty](ctx, a.c, a.call("PUT", "/canaries", nil), map[string]map[string]string{"canaries": canaries}, false)
}

// CanaryScan calls GET /_mock/sandboxes/{id}/canary-scan.
func (a *Admin) CanaryScan(ctx context.Context, id string) (*Result[CanaryScan], error) {
	return doJSON[CanaryScan](ctx, a.c, a.call("GET", "/sandboxes/"+url.PathEscape(id)+"/canary-scan", nil), nil, true)
}

// Sandboxes calls GET /_mock/sandboxes.
func (a *Admin) Sandboxes(ctx context.Context) (*Result[MockSandboxes], error) {
	return doJSON[MockSandboxes](ctx, a.c, a.call("GET", "/sandboxes", nil), nil, true)
}

// TenantRelease is the answer of POST /_mock/tenants/release (the server's
// wire type).
type TenantRelease = wire.TenantRelease

// ReleaseTenant calls POST /_mock/tenants/release {"tenant":…} (200): the
// bundled server revokes the tenant's keys and removes its sandboxes (their
// processes killed), snapshots and named volumes.
func (a *Admin) ReleaseTenant(ctx context.Context, tenant string) (*Result[TenantRelease], error) {
	return doJSON[TenantRelease](ctx, a.c, a.call("POST", "/tenants/release", nil), map[string]string{"tenant": tenant}, true)
}
