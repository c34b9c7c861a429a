package mockserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/osb-capstone/acceptance/mock-server/egress"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// Wiring is how a bundled server builds its runtime and egress hub and
// resolves an image to a host profile. Each field left nil is the
// production one: the Linux runtime, the egress hub and the runtime's image
// profiles. Tests hand fakes to the one server they start (BundledConfig,
// serveWith); nothing is package state.
type Wiring struct {
	NewRuntime func(RuntimeOptions) (runtime.Runtime, error)
	NewEgress  func(EgressOptions) (EgressHub, io.Closer, error)
	ProfileFor func(image string) (runtime.Profile, error)
}

// withDefaults fills every nil field with the production wiring.
func (w Wiring) withDefaults() Wiring {
	if w.NewRuntime == nil {
		w.NewRuntime = newLinuxRuntime
	}
	if w.NewEgress == nil {
		w.NewEgress = newEgressHub
	}
	if w.ProfileFor == nil {
		w.ProfileFor = runtime.ProfileFor
	}
	return w
}

// newLinuxRuntime is the production runtime: namespaces and cgroups.
func newLinuxRuntime(o RuntimeOptions) (runtime.Runtime, error) {
	return runtime.NewLinux(runtime.Options{StateDir: o.StateDir, AllowInsecureNoIsolation: o.AllowInsecureNoIsolation,
		DiskLimitBytes: o.DiskLimitBytes})
}

// newEgressHub is the production egress: the gateway hub.
func newEgressHub(o EgressOptions) (EgressHub, io.Closer, error) {
	h, err := egress.NewHub(egress.HubConfig{Upstreams: o.Upstreams, StateDir: o.StateDir, Audit: o.Audit,
		DenyWebhook: o.DenyWebhook, PassThrough: o.PassThrough, Watched: o.Watched})
	if err != nil {
		return nil, nil, err
	}
	return EgressAdapter{Hub: h}, h, nil
}

// InvalidPolicyError marks a networkPolicy the egress layer rejects; create
// answers it with 400 SANDBOX::INVALID_PARAMETER (a client mistake).
type InvalidPolicyError struct{ Err error }

func (e InvalidPolicyError) Error() string { return "invalid networkPolicy: " + e.Err.Error() }
func (e InvalidPolicyError) Unwrap() error { return e.Err }

// EgressAdapter makes *egress.Hub an EgressHub (policy kept as raw JSON in
// this package, parsed here).
type EgressAdapter struct{ Hub *egress.Hub }

// Attach parses the raw policy and attaches the sandbox.
func (a EgressAdapter) Attach(id string, raw json.RawMessage, credentialProxy bool) (EgressAttachment, error) {
	var p egress.Policy
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, InvalidPolicyError{Err: err}
	}
	if _, err := p.Normalize(); err != nil {
		return nil, InvalidPolicyError{Err: err}
	}
	if len(p.Egress) > egress.DefaultMaxRules {
		return nil, InvalidPolicyError{Err: fmt.Errorf("%d rules, more than the maximum %d", len(p.Egress), egress.DefaultMaxRules)}
	}
	att, err := a.Hub.Attach(id, p, credentialProxy)
	if err != nil {
		return nil, err
	}
	return att, nil
}

// SetDenyOverride forwards to the hub.
func (a EgressAdapter) SetDenyOverride(targets []string) error { return a.Hub.SetDenyOverride(targets) }

// ClearDenyOverride forwards to the hub.
func (a EgressAdapter) ClearDenyOverride() { a.Hub.ClearDenyOverride() }

// SetSandboxDenyOverride forwards to the hub.
func (a EgressAdapter) SetSandboxDenyOverride(id string, targets []string) error {
	return a.Hub.SetSandboxDenyOverride(id, targets)
}

var _ EgressHub = EgressAdapter{}

func isInvalidPolicy(err error) bool {
	var ip InvalidPolicyError
	return errors.As(err, &ip)
}
