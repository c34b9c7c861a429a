// Package audit is the bundled server's evidence trail: an ordered, append-only
// record of everything that happened to each sandbox. The harness reads it over
// the admin HTTP route (a documented mock extension); it is also written as JSONL
// in the state dir. Secrets never enter it: API keys appear only as fingerprints.
//
// The event schema itself is defined once, in mock-server/wire (the harness
// decodes the same types); the names here are aliases of it.
package audit

import "github.com/osb-capstone/acceptance/mock-server/wire"

// Kind names what an Event records (a string).
type Kind = wire.Kind

// The event kinds.
const (
	KindLifecycle = wire.KindLifecycle // a lifecycle API call (method, path, status)
	KindCommand   = wire.KindCommand   // a command run through execd
	KindFile      = wire.KindFile      // a file transfer or file-system change through execd
	KindState     = wire.KindState     // a sandbox state change and why
	KindEgress    = wire.KindEgress    // an egress decision (DNS or connect)
	KindVault     = wire.KindVault     // a credential-vault change or an injection
	KindFault     = wire.KindFault     // a simulated fault switched on or off by the admin API
	KindCanary    = wire.KindCanary    // a planted canary value found somewhere it must not be
	// KindEgressRequest: a request the egress gateway forwarded to an allowed host.
	KindEgressRequest = wire.KindEgressRequest
	// KindExecdAfterRemoval: a connection to a removed sandbox's execd endpoint
	// during its grace period (a documented mock extension).
	KindExecdAfterRemoval = wire.KindExecdAfterRemoval
)

// The event and its parts (see wire for the fields).
type (
	Event     = wire.Event
	Lifecycle = wire.Lifecycle
	Command   = wire.Command
	File      = wire.File
	State     = wire.State
	Egress    = wire.Egress
	Vault     = wire.Vault
	Fault     = wire.Fault
	Canary    = wire.Canary

	EgressRequest = wire.EgressRequest

	AfterRemoval = wire.AfterRemoval
)

// Recorder accepts events. Implementations fill in Seq and Time and must be
// safe for concurrent use.
type Recorder interface {
	Record(ev Event)
}

// RecorderFunc adapts a function to Recorder.
type RecorderFunc func(ev Event)

// Record calls f(ev).
func (f RecorderFunc) Record(ev Event) { f(ev) }
