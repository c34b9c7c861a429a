// Package audit is the bundled server's evidence trail: an ordered, append-only
// record of everything that happened to each sandbox. The harness reads it over
// the admin HTTP route (a documented mock extension); it is also written as JSONL
// in the state dir. Secrets never enter it: API keys appear only as fingerprints.
package audit

import (
	"encoding/json"
	"time"
)

// Kind names what an Event records.
type Kind string

const (
	KindLifecycle Kind = "lifecycle" // a lifecycle API call (method, path, status)
	KindCommand   Kind = "command"   // a command run through execd
	KindFile      Kind = "file"      // a file transfer or file-system change through execd
	KindState     Kind = "state"     // a sandbox state change and why
	KindEgress    Kind = "egress"    // an egress decision (DNS or connect)
	KindVault     Kind = "vault"     // a credential-vault change or an injection
	KindFault     Kind = "fault"     // a simulated fault switched on or off by the admin API
	KindCanary    Kind = "canary"    // a planted canary value found somewhere it must not be
)

// Event is one entry of the trail. Exactly one of the detail pointers matching
// Kind is set. Seq is global and strictly increasing across the whole server.
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
	// ExecdAfterRemoval: a call to a removed sandbox's execd endpoint.
	ExecdAfterRemoval *AfterRemoval `json:"execd_after_removal,omitempty"`
}

// Lifecycle records one lifecycle API request.
type Lifecycle struct {
	Method         string `json:"method"`
	Path           string `json:"path"`
	Status         int    `json:"status"`
	RequestID      string `json:"request_id"`
	KeyFingerprint string `json:"key_fingerprint,omitempty"` // first 12 hex of sha256(key); never the key
	// Body is the request body for create/renew/patch calls (JSON, with env
	// values replaced by their sha256 fingerprints), so a grader can see the
	// policy a subject asked for.
	Body json.RawMessage `json:"body,omitempty"`
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

// Canary records where a planted value was found.
type Canary struct {
	Label    string `json:"label"`    // the canary's name, never its value
	Location string `json:"location"` // env | command | file | output | egress-request
	Where    string `json:"where"`    // e.g. a path, a command id, an env var name
}

// Recorder accepts events. Implementations fill in Seq and Time and must be
// safe for concurrent use.
type Recorder interface {
	Record(ev Event)
}

// RecorderFunc adapts a function to Recorder.
type RecorderFunc func(ev Event)

// Record calls f(ev).
func (f RecorderFunc) Record(ev Event) { f(ev) }

// KindExecdAfterRemoval records a connection to a removed sandbox's execd
// endpoint during its grace period (a documented mock extension: the real
// container is gone and the client gets a connection error; the bundled
// server resets the connection too, but records who still called).
const KindExecdAfterRemoval Kind = "execd_after_removal"

// AfterRemoval is one connection attempt to a removed sandbox's execd
// endpoint: the request line read (empty when none came within the read
// deadline), then the connection was reset.
type AfterRemoval struct {
	Method string `json:"method,omitempty"`
	Path   string `json:"path,omitempty"`
	Note   string `json:"note,omitempty"` // e.g. "no request line within 1s"
}
