package wire

import (
	"encoding/base64"
	"encoding/json"
	"time"
)

// Kind names what an Event records. It is a plain string (an alias), so
// callers compare and pass it as one.
type Kind = string

// The event kinds.
const (
	KindLifecycle Kind = "lifecycle" // a lifecycle API call (method, path, status)
	KindCommand   Kind = "command"   // a command run through execd
	KindFile      Kind = "file"      // a file transfer or file-system change through execd
	KindState     Kind = "state"     // a sandbox state change and why
	KindEgress    Kind = "egress"    // an egress decision (DNS or connect)
	KindVault     Kind = "vault"     // a credential-vault change or an injection
	KindFault     Kind = "fault"     // a simulated fault switched on or off by the admin API
	KindCanary    Kind = "canary"    // a planted canary value found somewhere it must not be
	// KindEgressRequest records one HTTP request the egress gateway forwarded
	// to an allowed host: which sandbox sent what where (attribution by
	// identity, never by time), and which watched values it carried.
	KindEgressRequest Kind = "egress_request"

	// KindExecdAfterRemoval records a connection to a removed sandbox's execd
	// endpoint during its grace period (a documented mock extension: the real
	// container is gone and the client gets a connection error; the bundled
	// server resets the connection too, but records who still called).
	KindExecdAfterRemoval Kind = "execd_after_removal"
)

// Event is one entry of the audit trail. Exactly one of the detail pointers
// matching Kind is set. Seq is global and strictly increasing across the whole
// server.
type Event struct {
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	SandboxID string    `json:"sandbox_id,omitempty"`
	Kind      Kind      `json:"kind"`

	Lifecycle *Lifecycle `json:"lifecycle,omitempty"`
	Command   *Command   `json:"command,omitempty"`
	File      *File      `json:"file,omitempty"`
	State     *State     `json:"state,omitempty"`
	Egress    *Egress    `json:"egress,omitempty"`
	Vault     *Vault     `json:"vault,omitempty"`
	Fault     *Fault     `json:"fault,omitempty"`
	Canary    *Canary    `json:"canary,omitempty"`
	// EgressRequest: a request the egress gateway forwarded.
	EgressRequest *EgressRequest `json:"egress_request,omitempty"`
	// ExecdAfterRemoval: a call to a removed sandbox's execd endpoint.
	ExecdAfterRemoval *AfterRemoval `json:"execd_after_removal,omitempty"`
}

// Lifecycle records one lifecycle API request.
type Lifecycle struct {
	Method         string `json:"method"`
	Path           string `json:"path"`
	Status         int    `json:"status"`
	RequestID      string `json:"request_id"`
	KeyFingerprint string `json:"key_fingerprint,omitempty"` // Fingerprint(key); never the key
	// Body is the request body for create/renew/patch calls (JSON, with env
	// values replaced by their fingerprints: RedactBody), so a grader can see
	// the policy a subject asked for. On the wire it is raw JSON.
	Body json.RawMessage `json:"body,omitempty"`
}

// UnmarshalJSON also accepts Body as the base64 string older servers wrote (a
// Go []byte field) and always leaves the JSON itself in Body, so old
// audit.jsonl files read like new ones.
func (l *Lifecycle) UnmarshalJSON(b []byte) error {
	type plain Lifecycle
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if len(p.Body) > 0 && p.Body[0] == '"' {
		var s string
		if err := json.Unmarshal(p.Body, &s); err == nil {
			if dec, err := base64.StdEncoding.DecodeString(s); err == nil && json.Valid(dec) {
				p.Body = dec
			}
		}
	}
	*l = Lifecycle(p)
	return nil
}

// Command records one execd command, foreground or background.
type Command struct {
	ID          string    `json:"id"`
	Command     string    `json:"command"`
	Cwd         string    `json:"cwd,omitempty"`
	TimeoutMs   int64     `json:"timeout_ms,omitempty"`
	Background  bool      `json:"background,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	ExitCode    *int      `json:"exit_code,omitempty"` // nil while running or unknown; -1 killed
	DurationMs  int64     `json:"duration_ms"`
	StdoutBytes int64     `json:"stdout_bytes"`
	StderrBytes int64     `json:"stderr_bytes"`
	Error       string    `json:"error,omitempty"` // e.g. "timeout", "interrupted", "spawn: ..."
}

// File records one file operation.
type File struct {
	Op     string `json:"op"` // upload | download | delete | mv | mkdir | rmdir | replace | chmod
	Path   string `json:"path"`
	Dest   string `json:"dest,omitempty"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
	Status int    `json:"status"`
}

// State records a state change.
type State struct {
	From   string `json:"from,omitempty"`
	To     string `json:"to"`     // Running, Paused, Terminated, Failed, Deleted, Expired
	Reason string `json:"reason"` // e.g. "deleted by API", "ttl expired", "entrypoint exited 0"
}

// Egress records one egress decision.
type Egress struct {
	Phase    string `json:"phase"` // dns | connect | proxy
	Host     string `json:"host"`
	Port     int    `json:"port,omitempty"`
	Decision string `json:"decision"`       // allow | deny | error
	Rule     string `json:"rule,omitempty"` // matching rule target, "default" or "override:<target>"
	Upstream string `json:"upstream,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// EgressRequest records one HTTP request the egress gateway forwarded to an
// allowed host's upstream. Never a secret or a body: watched values are
// named by their labels.
type EgressRequest struct {
	Host       string `json:"host"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	Status     int    `json:"status"`     // the upstream's answer; 502 when it failed
	BodyBytes  int64  `json:"body_bytes"` // of the request body, as sent by the sandbox
	BodySHA256 string `json:"body_sha256,omitempty"`
	// Authorization is how the request left the sandbox: "none", or
	// "present" (the sandbox's own header).
	Authorization string `json:"authorization"`
	// Injected: the credential vault injected a credential into it.
	Injected bool `json:"injected,omitempty"`
	// Watched are the labels of watched values (planted secrets, input
	// markers) found in its path, headers or body (the first 8 MiB),
	// with the encoding and the place: "platform_api_key in body (base64)".
	Watched []string `json:"watched,omitempty"`
}

// Vault records a credential-vault change or use. Never the secret.
type Vault struct {
	Op       string `json:"op"` // create | patch | delete | inject | redact
	Revision int64  `json:"revision,omitempty"`
	Binding  string `json:"binding,omitempty"`
	Host     string `json:"host,omitempty"`
}

// Fault records a simulated fault.
type Fault struct {
	Name   string `json:"name"` // e.g. egress-deny-override, expire-now
	Active bool   `json:"active"`
	Detail string `json:"detail,omitempty"`
}

// Canary records where a planted value was found (never the value).
type Canary struct {
	Label    string `json:"label"`    // the canary's name, never its value
	Location string `json:"location"` // env | command | file | output | egress-request
	Where    string `json:"where"`    // e.g. a path, a command id, an env var name
}

// AfterRemoval is one connection attempt to a removed sandbox's execd
// endpoint: the request line read (empty when none came within the read
// deadline), then the connection was reset.
type AfterRemoval struct {
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	Note   string `json:"note,omitempty"` // e.g. "no request line within 1s"
}

// AfterRemovalInFlight is the Note of a call that was already in flight when
// its sandbox was removed and lost its execd with it (reset, as the removed
// sandbox's later calls are): it was made before the removal.
const AfterRemovalInFlight = "in flight when the sandbox was removed"
