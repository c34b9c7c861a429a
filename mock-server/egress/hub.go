package egress

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// DefaultMaxRules is the real sidecar's OPENSANDBOX_EGRESS_MAX_RULES default.
const DefaultMaxRules = 4096

// SandboxCABundlePath is where SandboxFiles mounts the CA bundle in a sandbox.
const SandboxCABundlePath = "/etc/ssl/certs/ca-certificates.crt"

// HubConfig configures a Hub.
type HubConfig struct {
	// Upstreams maps a lower-case hostname (or "*.suffix") to the loopback stub
	// that plays that host, e.g. "pypi.org" → "http://127.0.0.1:41234". The
	// gateway dials nothing else. Upstream URLs must point at loopback unless
	// PassThrough is set.
	Upstreams map[string]string
	// PassThrough lets an allowed host with no Upstreams entry be dialled
	// directly on the real network. Real use only: tests and the acceptance
	// suite never set it (the suite sends no traffic off the machine).
	PassThrough bool
	// StateDir holds <StateDir>/egress/<id>.sock and the CA files.
	StateDir string
	// Audit receives every decision (KindEgress), vault change/injection
	// (KindVault) and override switch (KindFault). Nil discards.
	Audit audit.Recorder
	// DenyWebhook, when set, receives the §3.4 payload for every denial. It
	// must be a loopback URL unless PassThrough is set.
	DenyWebhook string
	// MaxRules caps the rules of a policy (413 above it); 0 → 4096.
	MaxRules int
	// Watched returns the values (label → value) the gateway looks for in
	// every request it forwards to an allowed host (planted secrets, input
	// markers); each forwarded request is recorded (KindEgressRequest) with
	// the labels found. Nil: requests are recorded with none.
	Watched func() map[string]string
	// HostCABundle is the host's CA bundle merged with the hub CA into the
	// sandbox's bundle; "" → /etc/ssl/certs/ca-certificates.crt (skipped if absent).
	HostCABundle string
}

// Hub owns the per-sandbox gateways, the CA and the deny override.
type Hub struct {
	cfg       HubConfig
	upstreams map[string]*url.URL
	ca        *authority
	dir       string
	bundle    string
	fwd       *forwarder
	transport *http.Transport
	webhook   *http.Client
	wg        sync.WaitGroup

	mu       sync.Mutex
	atts     map[string]*Attachment
	override []Rule
	// sandboxOverride is a deny override of one sandbox (drill D1 keyed to
	// one subject's sandboxes, so others on the hub are not denied).
	sandboxOverride map[string][]Rule
	closed          bool

	// the world-readable copy of the bundle (loopback.go)
	publicOnce sync.Once
	public     string
	publicErr  error
}

// NewHub validates cfg, generates the CA and writes the sandbox CA bundle.
func NewHub(cfg HubConfig) (*Hub, error) {
	if cfg.StateDir == "" {
		return nil, errors.New("egress: HubConfig.StateDir is required")
	}
	if cfg.MaxRules <= 0 {
		cfg.MaxRules = DefaultMaxRules
	}
	if cfg.HostCABundle == "" {
		cfg.HostCABundle = "/etc/ssl/certs/ca-certificates.crt"
	}
	h := &Hub{cfg: cfg, upstreams: map[string]*url.URL{}, atts: map[string]*Attachment{}}
	for host, raw := range cfg.Upstreams {
		key := strings.ToLower(strings.TrimSuffix(strings.TrimSpace(host), "."))
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("egress: upstream for %q: want http(s)://host:port, got %q", host, raw)
		}
		if !cfg.PassThrough && !isLoopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("egress: upstream for %q is %q, not loopback (only loopback stubs are allowed)", host, raw)
		}
		h.upstreams[key] = u
	}
	if cfg.DenyWebhook != "" {
		u, err := url.Parse(cfg.DenyWebhook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("egress: deny webhook: want an http(s) URL, got %q", cfg.DenyWebhook)
		}
		if !cfg.PassThrough && !isLoopbackHost(u.Hostname()) {
			return nil, fmt.Errorf("egress: deny webhook %q is not loopback", cfg.DenyWebhook)
		}
		h.webhook = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	}
	ca, err := newAuthority()
	if err != nil {
		return nil, err
	}
	h.ca = ca
	h.dir = filepath.Join(cfg.StateDir, "egress")
	if err := os.MkdirAll(h.dir, 0o700); err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	if err := h.writeCAFiles(); err != nil {
		return nil, err
	}
	h.transport = &http.Transport{
		Proxy:                 nil, // never the server's HTTP_PROXY
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   8,
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		ForceAttemptHTTP2:     false,
	}
	h.fwd = newForwarder(h)
	return h, nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (h *Hub) writeCAFiles() error {
	caPath := filepath.Join(h.dir, "ca.pem")
	if err := os.WriteFile(caPath, h.ca.certPEM, 0o644); err != nil {
		return fmt.Errorf("egress: write CA: %w", err)
	}
	var bundle []byte
	if b, err := os.ReadFile(h.cfg.HostCABundle); err == nil {
		bundle = append(bundle, b...)
		if len(bundle) > 0 && bundle[len(bundle)-1] != '\n' {
			bundle = append(bundle, '\n')
		}
	}
	bundle = append(bundle, h.ca.certPEM...)
	h.bundle = filepath.Join(h.dir, "ca-bundle.crt")
	if err := os.WriteFile(h.bundle, bundle, 0o644); err != nil {
		return fmt.Errorf("egress: write CA bundle: %w", err)
	}
	return nil
}

// CACertPEM returns the hub CA certificate (PEM).
func (h *Hub) CACertPEM() []byte { return append([]byte(nil), h.ca.certPEM...) }

// CABundlePath is the host path of the bundle (host CAs + hub CA).
func (h *Hub) CABundlePath() string { return h.bundle }

// Attach creates the gateway for a sandbox: a unix socket at
// <StateDir>/egress/<id>.sock that the runtime mounts at
// /run/osb/gateway.sock, plus the sandbox's :18080 API. policy is normalized
// (an invalid one is an error); credentialProxy enables the vault API.
func (h *Hub) Attach(sandboxID string, policy Policy, credentialProxy bool) (*Attachment, error) {
	if sandboxID == "" || strings.ContainsAny(sandboxID, "/\\\x00") || sandboxID == "." || sandboxID == ".." {
		return nil, fmt.Errorf("egress: invalid sandbox id %q", sandboxID)
	}
	p, err := policy.Normalize()
	if err != nil {
		return nil, fmt.Errorf("egress: invalid policy: %w", err)
	}
	if p.Egress == nil {
		p.Egress = []Rule{} // networkPolicy {} reaches the real sidecar as {"egress":[]}
	}
	if len(p.Egress) > h.cfg.MaxRules {
		return nil, fmt.Errorf("egress: policy has %d rules, more than the maximum %d", len(p.Egress), h.cfg.MaxRules)
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errors.New("egress: hub closed")
	}
	if _, dup := h.atts[sandboxID]; dup {
		h.mu.Unlock()
		return nil, fmt.Errorf("egress: sandbox %s already attached", sandboxID)
	}
	a := newAttachment(h, sandboxID, p, credentialProxy)
	h.atts[sandboxID] = a
	h.mu.Unlock()
	if err := a.start(); err != nil {
		h.mu.Lock()
		delete(h.atts, sandboxID)
		h.mu.Unlock()
		return nil, err
	}
	return a, nil
}

// Attachment returns the live attachment of a sandbox, if any.
func (h *Hub) Attachment(sandboxID string) (*Attachment, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, ok := h.atts[sandboxID]
	return a, ok
}

func (h *Hub) detach(a *Attachment) {
	h.mu.Lock()
	if h.atts[a.id] == a {
		delete(h.atts, a.id)
		delete(h.sandboxOverride, a.id)
	}
	h.mu.Unlock()
}

// SetDenyOverride makes the platform deny targets (FQDN, *.x, IP, CIDR) for
// every sandbox, before any sandbox policy (drill D1). Denials it causes are
// audited with rule "override:<target>"; switching it is audited as KindFault.
// An empty list clears the override.
func (h *Hub) SetDenyOverride(targets []string) error {
	if len(targets) == 0 {
		h.ClearDenyOverride()
		return nil
	}
	rules := make([]Rule, 0, len(targets))
	for _, t := range targets {
		nt, err := NormalizeTarget(t)
		if err != nil {
			return fmt.Errorf("egress: deny override: %w", err)
		}
		rules = append(rules, Rule{Action: ActionDeny, Target: nt})
	}
	h.mu.Lock()
	h.override = rules
	h.mu.Unlock()
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.Target
	}
	h.record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{
		Name: "egress-deny-override", Active: true, Detail: "deny " + strings.Join(names, ","),
	}})
	return nil
}

// denyRules normalizes deny-override targets.
func denyRules(targets []string) ([]Rule, []string, error) {
	rules := make([]Rule, 0, len(targets))
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		nt, err := NormalizeTarget(t)
		if err != nil {
			return nil, nil, fmt.Errorf("egress: deny override: %w", err)
		}
		rules = append(rules, Rule{Action: ActionDeny, Target: nt})
		names = append(names, nt)
	}
	return rules, names, nil
}

// SetSandboxDenyOverride makes the platform deny targets for one sandbox, as
// SetDenyOverride does for all (audited the same way, with the sandbox's
// id); an empty list clears it. An empty sandboxID only checks the targets.
// It lasts until the sandbox is detached.
func (h *Hub) SetSandboxDenyOverride(sandboxID string, targets []string) error {
	rules, names, err := denyRules(targets)
	if err != nil || sandboxID == "" {
		return err
	}
	h.mu.Lock()
	if h.sandboxOverride == nil {
		h.sandboxOverride = map[string][]Rule{}
	}
	if len(rules) == 0 {
		delete(h.sandboxOverride, sandboxID)
	} else {
		h.sandboxOverride[sandboxID] = rules
	}
	h.mu.Unlock()
	h.record(wire.Event{SandboxID: sandboxID, Kind: wire.KindFault, Fault: &wire.Fault{
		Name: "egress-deny-override", Active: len(rules) > 0, Detail: "deny " + strings.Join(names, ","),
	}})
	return nil
}

// ClearDenyOverride removes the deny override.
func (h *Hub) ClearDenyOverride() {
	h.mu.Lock()
	h.override = nil
	h.mu.Unlock()
	h.record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "egress-deny-override", Active: false}})
}

// decide applies the overrides (the hub's, then the sandbox's), then the
// sandbox policy.
func (h *Hub) decide(sandboxID string, p Policy, host string) Decision {
	h.mu.Lock()
	ov, sov := h.override, h.sandboxOverride[sandboxID]
	h.mu.Unlock()
	for _, rules := range [2][]Rule{ov, sov} {
		for _, r := range rules {
			if r.Matches(host) {
				return Decision{Allowed: false, Action: ActionDeny, Rule: "override:" + r.Target, Index: -1, Override: true}
			}
		}
	}
	return p.Evaluate(host)
}

// upstreamFor returns the configured upstream for host (exact, then the
// closest "*.suffix" key), or nil.
func (h *Hub) upstreamFor(host string) *url.URL {
	host = normalizeHost(host)
	if u, ok := h.upstreams[host]; ok {
		return u
	}
	for rest := host; ; {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			return nil
		}
		rest = rest[i+1:]
		if u, ok := h.upstreams["*."+rest]; ok {
			return u
		}
	}
}

func (h *Hub) record(ev wire.Event) {
	if h.cfg.Audit != nil {
		h.cfg.Audit.Record(ev) // the recorder fills in Seq and Time
	}
}

// Close stops every gateway and waits for pending webhook posts.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	atts := make([]*Attachment, 0, len(h.atts))
	for _, a := range h.atts {
		atts = append(atts, a)
	}
	h.mu.Unlock()
	for _, a := range atts {
		a.Close()
	}
	h.fwd.close()
	h.transport.CloseIdleConnections()
	h.wg.Wait()
	return nil
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails since Go 1.24
	return hex.EncodeToString(b)
}
