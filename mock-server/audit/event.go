// Package audit is the bundled server's evidence trail: an ordered, append-only
// record of everything that happened to each sandbox. The harness reads it over
// the admin HTTP route (a documented mock extension); it is also written as JSONL
// in the state dir. Secrets never enter it: API keys appear only as fingerprints.
//
// The event schema itself is defined once, in mock-server/wire (the harness
// decodes the same types), and every package calls its types by those names
// (wire.Event, wire.KindCommand, …): one name per audit type.
package audit

import "github.com/osb-capstone/acceptance/mock-server/wire"

// Recorder accepts events. Implementations fill in Seq and Time and must be
// safe for concurrent use.
type Recorder interface {
	Record(ev wire.Event)
}

// RecorderFunc adapts a function to Recorder.
type RecorderFunc func(ev wire.Event)

// Record calls f(ev).
func (f RecorderFunc) Record(ev wire.Event) { f(ev) }
