package command

import (
	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// The record's vocabulary: what a Record holds is named here, so a reader of
// a Record (the steps) needs no runner and no recording proxy of its own.
type (
	// Call is one exchange the recording proxy saw (Record.Observed).
	Call = observe.Call
	// Inputs are a command's inputs (Spec.Inputs).
	Inputs = subject.Inputs
	// Env is a command's environment (Spec.Env).
	Env = subject.Env
	// Result is how a command ended (Record.Res).
	Result = subject.Result
)

// The kinds of Call.
const (
	KindLifecycle = observe.KindLifecycle
	KindEndpoint  = observe.KindEndpoint
)

// CapacityInjected is Call.Injected of a create the recording proxy answered
// itself with 429 for drill D3 (observe.Proxy.RefuseCreates).
const CapacityInjected = observe.CapacityInjected

// DroppedReason says why the file at path, in a confined command's {out},
// was not copied out of its box ("" when it was not dropped, or the command
// was not confined).
func DroppedReason(path string) string { return subject.DroppedReason(path) }
