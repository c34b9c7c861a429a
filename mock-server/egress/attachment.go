package egress

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/egress/sidecar"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Attachment is one sandbox's gateway and egress API.
type Attachment struct {
	hub             *Hub
	id              string
	token           string
	sock            string
	credentialProxy bool
	api             http.Handler

	mu     sync.RWMutex
	policy Policy
	vault  *vault // nil until POST /credential-vault

	ln      net.Listener
	srv     *http.Server
	connMu  sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool
	closeMu sync.Once

	// the loopback proxy of a sandbox without a network namespace (loopback.go)
	proxyMu   sync.Mutex
	proxy     *sidecar.Sidecar
	proxyStop func()
	proxyEnv  map[string]string
}

func newAttachment(h *Hub, id string, p Policy, credentialProxy bool) *Attachment {
	a := &Attachment{
		hub:             h,
		id:              id,
		token:           randomToken(),
		sock:            h.socketPath(id),
		credentialProxy: credentialProxy,
		policy:          p,
		conns:           map[net.Conn]struct{}{},
	}
	a.api = a.newAPIHandler()
	return a
}

// socketPath names a sandbox's gateway socket by a short hash of its id: a
// unix socket path has at most 107 bytes, and a uuid under a state dir such
// as /var/lib/osb-capstone/instances/<instance>/egress/ would not fit.
func (h *Hub) socketPath(id string) string {
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(h.dir, hex.EncodeToString(sum[:8])+".sock")
}

// maxSocketPath is the longest path a unix socket can be bound at (sun_path
// holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

func (a *Attachment) start() error {
	if len(a.sock) > maxSocketPath {
		return fmt.Errorf("egress: the state dir is too long for a gateway socket (%d bytes, unix sockets allow %d); use a shorter --state-dir", len(a.sock), maxSocketPath)
	}
	_ = os.Remove(a.sock)
	ln, err := net.Listen("unix", a.sock)
	if err != nil {
		return fmt.Errorf("egress: gateway socket: %w", err)
	}
	// The socket is bind-mounted into the sandbox, whose processes have no
	// capabilities; the directory (0700) keeps other host users out.
	if err := os.Chmod(a.sock, 0o666); err != nil {
		_ = ln.Close()
		return fmt.Errorf("egress: gateway socket: %w", err)
	}
	a.ln = ln
	a.srv = &http.Server{Handler: a.gatewayHandler(), ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return nil
}

// SandboxID is the sandbox this attachment belongs to.
func (a *Attachment) SandboxID() string { return a.id }

// SocketPath is the host path of the gateway socket; mount it at
// /run/osb/gateway.sock inside the sandbox.
func (a *Attachment) SocketPath() string { return a.sock }

// Token is the OPENSANDBOX-EGRESS-AUTH value for the :18080 API.
func (a *Attachment) Token() string { return a.token }

// Handler serves the sandbox's :18080 egress API (/policy, /healthz,
// /credential-vault…). It reads r.RemoteAddr for the vault's loopback rule.
func (a *Attachment) Handler() http.Handler { return a.api }

// CredentialProxy reports whether the vault was enabled at create.
func (a *Attachment) CredentialProxy() bool { return a.credentialProxy }

// Policy returns a copy of the policy currently enforced.
func (a *Attachment) Policy() Policy {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.policy.clone()
}

// SandboxFiles maps in-sandbox paths to host files to mount read-only: the CA
// bundle (host CAs + the hub CA) at /etc/ssl/certs/ca-certificates.crt.
func (a *Attachment) SandboxFiles() map[string]string {
	return map[string]string{SandboxCABundlePath: a.hub.bundle}
}

// SandboxEnv is the environment that makes common clients trust the bundle.
func (a *Attachment) SandboxEnv() map[string]string {
	return map[string]string{
		"SSL_CERT_FILE":       SandboxCABundlePath,
		"REQUESTS_CA_BUNDLE":  SandboxCABundlePath,
		"PIP_CERT":            SandboxCABundlePath,
		"CURL_CA_BUNDLE":      SandboxCABundlePath,
		"NODE_EXTRA_CA_CERTS": SandboxCABundlePath,
	}
}

// Close stops the gateway, drops its open tunnels and removes the socket.
func (a *Attachment) Close() error {
	a.closeMu.Do(func() {
		a.connMu.Lock()
		a.closed = true
		conns := a.conns
		a.conns = map[net.Conn]struct{}{}
		a.connMu.Unlock()
		a.stopProxy()
		if a.srv != nil {
			_ = a.srv.Close()
		}
		for c := range conns {
			_ = c.Close()
		}
		_ = os.Remove(a.sock)
		a.hub.detach(a)
	})
	return nil
}

func (a *Attachment) track(c net.Conn) bool {
	a.connMu.Lock()
	defer a.connMu.Unlock()
	if a.closed {
		return false
	}
	a.conns[c] = struct{}{}
	return true
}

func (a *Attachment) untrack(c net.Conn) {
	a.connMu.Lock()
	delete(a.conns, c)
	a.connMu.Unlock()
}

// verdict is a gateway decision with what it needs to act on it.
type verdict struct {
	Decision
	Outcome  string   // allow | deny | error
	Upstream *url.URL // set when Outcome == allow and the phase dials
	Status   int      // HTTP status for the sidecar when not allowed
	Message  string   // text for the sidecar / client when not allowed
}

// check decides host for phase (dns | connect | proxy) against the current
// policy (override first), resolves the upstream for dialling phases, audits
// the decision and fires the deny webhook.
func (a *Attachment) check(phase, host string, port int, note string) verdict {
	host = normalizeHost(host)
	a.mu.RLock()
	p := a.policy
	a.mu.RUnlock()
	v := verdict{Decision: a.hub.decide(a.id, p, host)}
	reason := note
	switch {
	case !v.Allowed:
		v.Outcome = "deny"
		v.Status = http.StatusForbidden
		v.Message = fmt.Sprintf("egress denied by policy: %s (rule %s)", host, v.Rule)
	case phase != "dns" && isIPLiteral(host):
		v.Allowed = false
		v.Outcome = "deny"
		v.Rule = "ip-literal"
		v.Status = http.StatusForbidden
		v.Message = fmt.Sprintf("egress denied: raw IP destination %s is never relayed; connect by host name", host)
	default:
		u := a.hub.upstreamFor(host)
		switch {
		case u != nil:
			v.Outcome = "allow"
			v.Upstream = u
		case a.hub.cfg.PassThrough:
			v.Outcome = "allow"
			scheme := "http"
			if port == 443 {
				scheme = "https"
			}
			v.Upstream = &url.URL{Scheme: scheme, Host: net.JoinHostPort(host, fmt.Sprint(port))}
			reason = joinNote(reason, "pass-through (real network)")
		case phase == "dns":
			v.Outcome = "allow"
			reason = joinNote(reason, "allowed, but no upstream is configured: connections will fail closed")
		default:
			v.Allowed = false
			v.Outcome = "error"
			v.Status = http.StatusBadGateway
			v.Message = fmt.Sprintf("egress gateway: %s is allowed by policy but no upstream is configured for it; refusing to dial (fail closed)", host)
			reason = joinNote(reason, "no upstream configured")
		}
	}
	ev := &wire.Egress{Phase: phase, Host: host, Port: port, Decision: v.Outcome, Rule: v.Rule, Reason: reason}
	if v.Upstream != nil && phase != "dns" {
		ev.Upstream = v.Upstream.String()
	}
	a.hub.record(wire.Event{SandboxID: a.id, Kind: wire.KindEgress, Egress: ev})
	if v.Outcome == "deny" {
		a.hub.notifyDenied(a.id, host)
	}
	return v
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
