package mockserver

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// Version is reported by GET /_mock/info.
const Version = "osb-mock 1.1.1-compatible (acceptance bundled server)"

// Config configures a Server. Only Runtime is required.
type Config struct {
	// Listen is the lifecycle API address; default 127.0.0.1:0.
	Listen string
	// APIKey is the OPEN-SANDBOX-API-KEY value. Empty means auth is skipped
	// until a key is added (AddAPIKey), as the real server does with no key
	// configured.
	APIKey string
	// NoAuth turns authentication off for good, as upstream's CI runs the
	// real server (no api_key): every lifecycle call is accepted with any
	// key or none, and no key can be added, so there are no tenants either.
	// Not for grading (`acceptance grade` refuses such a target). With
	// APIKey set, New refuses.
	NoAuth bool
	// AdminToken is the X-Mock-Admin-Token for /_mock. Empty disables the admin
	// API (every /_mock call answers 401).
	AdminToken string
	// StateDir holds audit.jsonl. Empty: the audit trail is kept in memory only.
	StateDir string
	// MaxTimeout is the largest accepted create timeout (0 = no upper bound),
	// like server.max_sandbox_timeout_seconds.
	MaxTimeout time.Duration
	// Clock drives TTL timers and timestamps; default the wall clock.
	Clock Clock
	// Runtime creates the sandboxes (required).
	Runtime runtime.Runtime
	// Egress enforces networkPolicy. Nil: a create with networkPolicy gets 400,
	// like a real server without [egress].image.
	Egress EgressHub
	// ProfileFor maps an image URI to a host profile. Nil: runtime.ProfileFor.
	// An error fails create with 500 DOCKER::SANDBOX_IMAGE_PULL_FAILED.
	ProfileFor func(image string) (runtime.Profile, error)
	// ExecdGracePeriod is how long a removed sandbox's execd port keeps
	// listening to record (and reset) late calls (execd_linger.go): 0 means
	// 10 minutes, negative turns it off. Server.Close ends it in any case.
	ExecdGracePeriod time.Duration
	// Logger receives operational logs; default discards.
	Logger *slog.Logger
	// AllowedHostPaths are the host directories host-path volumes may come
	// from (the real server's storage.allowed_host_paths). Empty: every host
	// volume answers 400 VOLUME::HOST_PATH_NOT_ALLOWED.
	AllowedHostPaths []string
	// VolumeRoot holds the named volumes of pvc volumes (<VolumeRoot>/<claimName>),
	// the real Docker runtime's Docker named volumes. Empty: every pvc volume
	// answers 400 VOLUME::UNSUPPORTED_BACKEND. StartBundled defaults it to
	// <state root>/volumes.
	VolumeRoot string
	// RenewIntent is renew-on-access through the server proxy (the real
	// server's [renew_intent]; off by default). See renew_access.go.
	RenewIntent RenewIntentConfig
	// DefaultLimits are the limits of a sandbox whose create's
	// resourceLimits leaves cpu, memory or pids out (quota.go). A zero field
	// takes DefaultSandboxLimits' value; a negative one: no such limit.
	DefaultLimits runtime.Limits
	// TenantQuota bounds each tenant's live sandboxes and the sums of their
	// limits (quota.go). Zero fields: DefaultTenantQuota; negative: unbounded.
	TenantQuota Quota
	// VolumeQuotaBytes is each tenant's disk quota for its named volumes
	// (tenantvolumes.go): they live in a tmpfs of this size, mounted
	// nosuid,nodev. 0: DefaultVolumeQuota; negative: a plain directory
	// without a quota.
	VolumeQuotaBytes int64
	// ExecdAccessToken gives each sandbox's execd an access token of its own
	// (X-EXECD-ACCESS-TOKEN, enforced as upstream execd enforces
	// EXECD_ACCESS_TOKEN: every request, /ping and /proxy/… included),
	// returned only in that sandbox's endpoint responses' headers. Off: as
	// 1.1.1, whose server never sets one. StartBundled turns it on where the
	// sandboxes have no network namespace (ExecdTokenMode). execd_token.go.
	ExecdAccessToken bool
}

// Clock is the server's source of time; tests substitute a fake one.
type Clock interface {
	Now() time.Time
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled call that can be cancelled.
type Timer interface {
	Stop() bool
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (RealClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// EgressHub is what the server needs from the egress package. The lead wires
// the real *egress.Hub with a small adapter (its Attach takes an egress.Policy;
// the adapter unmarshals the raw networkPolicy JSON into it).
type EgressHub interface {
	// Attach creates the per-sandbox gateway for the create request's
	// networkPolicy (raw JSON, exactly as sent) and credentialProxy flag.
	Attach(sandboxID string, policy json.RawMessage, credentialProxy bool) (EgressAttachment, error)
	// SetDenyOverride makes every sandbox deny these targets (drill D1).
	SetDenyOverride(targets []string) error
	// ClearDenyOverride removes the override.
	ClearDenyOverride()
	// SetSandboxDenyOverride makes one sandbox deny these targets (drill D1
	// keyed to one subject); an empty sandboxID only checks the targets.
	SetSandboxDenyOverride(sandboxID string, targets []string) error
}

// EgressAttachment is one sandbox's egress gateway.
type EgressAttachment interface {
	SocketPath() string              // host unix socket mounted at /run/osb/gateway.sock
	Token() string                   // OPENSANDBOX-EGRESS-AUTH value
	Handler() http.Handler           // the :18080 egress API
	SandboxFiles() map[string]string // in-sandbox path → host file
	SandboxEnv() map[string]string   // extra env (CA bundle variables, …)
	Close() error
}
