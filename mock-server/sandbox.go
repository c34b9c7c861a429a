package mockserver

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// sandbox is one live sandbox. Fields below mu are guarded by Server.mu
// unless noted.
type sandbox struct {
	id         string
	image      string
	entrypoint []string
	platform   *platformSpec
	createdAt  time.Time
	rt         runtime.Sandbox
	execd      *execdEndpoint
	egress     EgressAttachment
	output     *outputLog
	record     *SandboxInfo
	keyFP      string         // the fingerprint of the key it was created with (its tenant's, tenancy.go)
	tenant     string         // the tenant of that key when it was created ("" untenanted)
	limits     runtime.Limits // the limits it runs with (quota.go)

	metadata  map[string]string
	expiresAt *time.Time
	timer     Timer
	// renewExtend is extensions["access.renew.extend.seconds"] (0: none);
	// lastAccessRenew the last renewal it caused (renew_access.go).
	renewExtend     time.Duration
	lastAccessRenew time.Time
	volumeClaims    []*volumeClaim // named volumes it mounts (namedvolumes.go)
	// snapshotID: the snapshot it was restored from (then image is empty and
	// restoredProfile the profile it runs).
	snapshotID      string
	restoredProfile runtime.Profile

	// trMu serialises pause and resume (lifecycle.go transition): the state
	// check and the runtime call are one step, so two racing calls get the
	// answers of two calls made one after the other, never a 500.
	trMu sync.Mutex

	stMu      sync.Mutex // guards the fields below
	paused    bool
	changedAt time.Time
	lastState string
}

// status is the API's SandboxStatus.
type status struct {
	State            string `json:"state"`
	Reason           string `json:"reason,omitempty"`
	Message          string `json:"message,omitempty"`
	LastTransitionAt string `json:"lastTransitionAt,omitempty"`
}

type platformSpec struct {
	OS   string `json:"os"`
	Arch string `json:"arch"`
}

type imageSpec struct {
	URI string `json:"uri"`
}

// sandboxJSON is the API's Sandbox object (nulls omitted).
type sandboxJSON struct {
	ID         string            `json:"id"`
	Image      *imageSpec        `json:"image,omitempty"`
	SnapshotID string            `json:"snapshotId,omitempty"`
	Platform   *platformSpec     `json:"platform,omitempty"`
	Status     status            `json:"status"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Entrypoint []string          `json:"entrypoint"`
	ExpiresAt  string            `json:"expiresAt,omitempty"`
	CreatedAt  string            `json:"createdAt"`
}

// statusOf reports the sandbox's state per CONTRACT §1.6 and records
// transitions it has not recorded yet (entrypoint exits).
func (s *Server) statusOf(sb *sandbox) status {
	st := sb.rt.State()
	sb.stMu.Lock()
	var out status
	switch {
	case st.State == "Terminated" || st.State == "Failed":
		out = status{State: st.State, Reason: st.Reason, Message: st.Message}
		if out.Reason == "" {
			out.Reason = "CONTAINER_EXITED"
			if st.State == "Failed" {
				out.Reason = "CONTAINER_EXITED_ERROR"
			}
		}
		if !st.Since.IsZero() {
			out.LastTransitionAt = formatTime(st.Since)
		}
	case sb.paused || st.State == "Paused":
		out = status{State: "Paused", Reason: "CONTAINER_PAUSED", LastTransitionAt: formatTime(sb.changedAt)}
	default:
		state := st.State
		if state == "" {
			state = "Running"
		}
		reason := st.Reason
		if reason == "" && state == "Running" {
			reason = "CONTAINER_RUNNING"
		}
		out = status{State: state, Reason: reason, Message: st.Message, LastTransitionAt: formatTime(sb.changedAt)}
	}
	prev := sb.lastState
	sb.lastState = out.State
	sb.stMu.Unlock()
	if prev != "" && prev != out.State && (out.State == "Terminated" || out.State == "Failed") {
		s.audit.Record(wire.Event{SandboxID: sb.id, Kind: wire.KindState, State: &wire.State{
			From: prev, To: out.State, Reason: fmt.Sprintf("entrypoint exited %d", st.ExitCode)}})
	}
	return out
}

// view renders the Sandbox object. Caller must not hold Server.mu.
func (s *Server) view(sb *sandbox) sandboxJSON {
	st := s.statusOf(sb)
	s.mu.Lock()
	defer s.mu.Unlock()
	v := sandboxJSON{
		ID:         sb.id,
		Platform:   sb.platform,
		Status:     st,
		Entrypoint: sb.entrypoint,
		CreatedAt:  formatTime(sb.createdAt),
		SnapshotID: sb.snapshotID,
	}
	if sb.image != "" {
		v.Image = &imageSpec{URI: sb.image}
	}
	if len(sb.metadata) > 0 {
		v.Metadata = make(map[string]string, len(sb.metadata))
		for k, val := range sb.metadata {
			v.Metadata[k] = val
		}
	}
	if sb.expiresAt != nil {
		v.ExpiresAt = formatTime(*sb.expiresAt)
	}
	return v
}

// destroy closes the execd endpoint and egress attachment and destroys the
// runtime sandbox.
func (sb *sandbox) destroy() error {
	var errs []error
	if sb.execd != nil {
		sb.execd.Close()
	}
	if sb.rt != nil {
		if err := sb.rt.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("destroy %s: %w", sb.id, err))
		}
	}
	if sb.egress != nil {
		if err := sb.egress.Close(); err != nil {
			errs = append(errs, fmt.Errorf("egress close %s: %w", sb.id, err))
		}
	}
	return errors.Join(errs...)
}
