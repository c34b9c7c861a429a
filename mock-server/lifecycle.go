package mockserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	osbruntime "github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

const createTimeout = 90 * time.Second

func notFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, "DOCKER::SANDBOX_NOT_FOUND", fmt.Sprintf("Sandbox %s not found.", id))
}

func readBody(r *http.Request) []byte {
	b, _ := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes))
	return b
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	body := readBody(r)
	req, verrs := parseCreate(body)
	if verrs != nil {
		writeValidation(w, verrs...)
		return
	}
	if s.refuseForCapacity(w, r) {
		return
	}
	if k := r.Header.Get(headerAPIKey); k != "" {
		req.keyFP = Fingerprint(k)
	}
	if req.SnapshotID != "" {
		// Resolved first, as 1.1.1 does (snapshot_restore.py).
		snap, release, status, code, msg := s.resolveSnapshot(r, req.SnapshotID)
		if code != "" {
			writeError(w, status, code, msg)
			return
		}
		defer release() // the copy is made once provision returns
		req.snapshot = snap
	}
	if code, msg := s.checkCreate(req); code != "" {
		writeError(w, http.StatusBadRequest, code, msg)
		return
	}
	// Limits (the request's, else the defaults) and the tenant's quota (quota.go).
	req.tenant, req.limits = s.requestTenant(r), s.limitsFor(req)
	if ok, msg := s.reserveQuota(req.tenant, req.limits); !ok {
		refuseQuota(w, msg)
		return
	}
	req.reserved = true
	defer func() {
		s.mu.Lock()
		if req.reserved {
			s.unreserveLocked(req.tenant, req.limits)
			req.reserved = false
		}
		s.mu.Unlock()
	}()
	mounts, claims, vstatus, vcode, vmsg := s.checkVolumes(req)
	if vcode == "" && len(mounts) > 0 {
		if ok, _ := s.cfg.Runtime.Isolation(); !ok {
			closeMounts(mounts)
			s.releaseVolumes(claims)
			vstatus, vcode, vmsg = http.StatusBadRequest, "SANDBOX::API_NOT_SUPPORTED", "volumes need the isolating runtime (isolation is not enforced on this server)."
		}
	}
	if vcode != "" {
		writeError(w, vstatus, vcode, vmsg)
		return
	}
	req.mounts, req.claims = mounts, claims
	defer closeMounts(mounts) // bound (or not) once provision returns
	provisioned := false
	defer func() {
		if !provisioned {
			s.releaseVolumes(claims)
		}
	}()
	var profile osbruntime.Profile
	var err error
	if req.snapshot != nil {
		profile = req.snapshot.profile
	} else {
		profile, err = s.cfg.ProfileFor(req.Image)
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "DOCKER::SANDBOX_IMAGE_PULL_FAILED",
			fmt.Sprintf("Failed to pull image %s: %v", req.Image, err))
		return
	}
	sb, code, err := s.provision(req, profile, redactBody(body))
	if err != nil {
		status := http.StatusInternalServerError
		if code == "SANDBOX::INVALID_PARAMETER" {
			status = http.StatusBadRequest
		} else {
			s.log.Warn("create failed", "err", err)
		}
		writeError(w, status, code, err.Error())
		return
	}
	provisioned = true
	setCreatedID(r, sb.id)
	resp := struct {
		ID         string            `json:"id"`
		Status     status            `json:"status"`
		Metadata   map[string]string `json:"metadata,omitempty"`
		Platform   *platformSpec     `json:"platform,omitempty"`
		ExpiresAt  string            `json:"expiresAt,omitempty"`
		CreatedAt  string            `json:"createdAt"`
		Entrypoint []string          `json:"entrypoint"`
	}{
		ID: sb.id,
		Status: status{State: "Running", Reason: "CONTAINER_RUNNING",
			Message: "Sandbox container started successfully.", LastTransitionAt: formatTime(sb.createdAt)},
		Metadata:   req.Metadata,
		Platform:   sb.platform,
		CreatedAt:  formatTime(sb.createdAt),
		Entrypoint: sb.entrypoint,
	}
	if sb.expiresAt != nil {
		resp.ExpiresAt = formatTime(*sb.expiresAt)
	}
	if len(resp.Metadata) == 0 {
		resp.Metadata = nil
	}
	writeJSON(w, http.StatusAccepted, resp)
}

// checkCreate performs the service-level (400) checks, returning a code.
func (s *Server) checkCreate(req *createRequest) (string, string) {
	if req.Extensions["poolRef"] != "" {
		return "SANDBOX::UNSUPPORTED_POOL_REF", "extensions.poolRef is only supported by the Kubernetes runtime."
	}
	if v, ok := req.Extensions["access.renew.extend.seconds"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 300 || n > 86400 || strings.TrimSpace(v) != v {
			return "SANDBOX::INVALID_PARAMETER", "extensions['access.renew.extend.seconds'] must be a decimal integer from 300 to 86400."
		}
	}
	if req.Timeout != nil && s.cfg.MaxTimeout > 0 && time.Duration(*req.Timeout)*time.Second > s.cfg.MaxTimeout {
		return "SANDBOX::INVALID_PARAMETER", fmt.Sprintf("timeout %d seconds exceeds the maximum of %d seconds (server.max_sandbox_timeout_seconds).",
			*req.Timeout, int64(s.cfg.MaxTimeout/time.Second))
	}
	for k, v := range req.Metadata {
		if isReserved(k) {
			return "SANDBOX::INVALID_METADATA_LABEL", fmt.Sprintf("metadata key %q uses the reserved prefix %s", k, reservedPrefix)
		}
		if err := checkLabelKey(k); err != nil {
			return "SANDBOX::INVALID_METADATA_LABEL", err.Error()
		}
		if err := checkLabelValue(k, v); err != nil {
			return "SANDBOX::INVALID_METADATA_LABEL", err.Error()
		}
	}
	if p := req.Platform; p != nil {
		if (p.OS != "linux" && p.OS != "windows") || (p.Arch != "amd64" && p.Arch != "arm64") {
			return "SANDBOX::INVALID_PARAMETER", fmt.Sprintf("platform {os:%q, arch:%q} is invalid: os must be linux|windows and arch amd64|arm64.", p.OS, p.Arch)
		}
		if p.OS != "linux" || p.Arch != runtime.GOARCH {
			return "SANDBOX::INVALID_PARAMETER", fmt.Sprintf("platform %s/%s cannot be satisfied by this server (linux/%s).", p.OS, p.Arch, runtime.GOARCH)
		}
	}
	if code, msg := checkRequestValues(req); code != "" {
		return code, msg
	}
	if req.SecureAccess {
		// 1.1.1 on Docker (services/docker/networking.py, _ensure_secure_access_support).
		return "SANDBOX::INVALID_PARAMETER", "secureAccess is not supported when runtime.type='docker'. Use the Kubernetes runtime to create secured sandboxes."
	}
	if req.NetworkPolicy != nil && s.cfg.Egress == nil {
		return "SANDBOX::INVALID_PARAMETER", "networkPolicy requires the egress sidecar ([egress].image), which this server does not have configured."
	}
	return "", ""
}

// provision starts the sandbox (egress, runtime, execd endpoint, TTL).
func (s *Server) provision(req *createRequest, profile osbruntime.Profile, redacted []byte) (*sandbox, string, error) {
	id := newUUID()
	spec := osbruntime.Spec{
		ID:         id,
		Profile:    profile,
		Entrypoint: req.Entrypoint,
		Env:        map[string]string{},
		Mounts:     req.mounts,
		Limits:     req.limits, // limitsFor: the request's, else the defaults
	}
	spec.Group, spec.GroupLimits = s.tenantGroup(req.tenant) // what the tenant's sandboxes use together (quota.go)
	for k, v := range req.Env {
		spec.Env[k] = v
	}
	sb := &sandbox{id: id, image: req.Image, entrypoint: req.Entrypoint, platform: req.Platform,
		metadata: req.Metadata, output: newOutputLog(outputLogLimit), renewExtend: accessRenewExtend(req.Extensions),
		volumeClaims: req.claims, keyFP: req.keyFP, tenant: req.tenant, limits: req.limits}
	if req.snapshot != nil {
		spec.Seed = req.snapshot.seed()
		sb.snapshotID, sb.restoredProfile = req.snapshot.id, req.snapshot.profile
	}
	if req.NetworkPolicy != nil {
		att, err := s.cfg.Egress.Attach(id, req.NetworkPolicy, req.CredentialProxy)
		if err != nil && isInvalidPolicy(err) {
			return nil, "SANDBOX::INVALID_PARAMETER", err
		}
		if err != nil {
			return nil, "DOCKER::SANDBOX_START_FAILED", fmt.Errorf("Failed to start egress sidecar for sandbox %s: %v", id, err)
		}
		sb.egress = att
		s.mu.Lock()
		deny := s.egressDenyByKey[req.keyFP]
		s.mu.Unlock()
		if len(deny) > 0 && req.keyFP != "" {
			if err := s.cfg.Egress.SetSandboxDenyOverride(id, deny); err != nil {
				_ = att.Close()
				return nil, "DOCKER::SANDBOX_START_FAILED", fmt.Errorf("Failed to apply the egress deny override to sandbox %s: %v", id, err)
			}
		}
		if lp, ok := att.(loopbackProxier); ok && !s.networkEnforced() {
			// No network namespace (insecure mode): no sidecar can stand
			// between the sandbox and the host's network. Its way to the
			// gateway is a proxy on the host's loopback, for clients that
			// honour HTTP(S)_PROXY (egress.Attachment.LoopbackProxy); the
			// variables replace any the request set.
			env, err := lp.LoopbackProxy()
			if err != nil {
				_ = att.Close()
				return nil, "DOCKER::SANDBOX_START_FAILED", fmt.Errorf("Failed to start egress sidecar for sandbox %s: %v", id, err)
			}
			for k, v := range env {
				spec.Env[k] = v
			}
		} else {
			spec.GatewaySocket = att.SocketPath()
			spec.ExtraFiles = att.SandboxFiles()
			for k, v := range att.SandboxEnv() {
				if _, set := spec.Env[k]; !set {
					spec.Env[k] = v
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	rt, err := s.cfg.Runtime.Create(ctx, spec)
	if err != nil {
		if sb.egress != nil {
			_ = sb.egress.Close()
		}
		var unknown osbruntime.ErrUnknownImage
		if errors.As(err, &unknown) {
			return nil, "DOCKER::SANDBOX_IMAGE_PULL_FAILED", fmt.Errorf("Failed to pull image %s: %v", req.Image, err)
		}
		s.log.Warn("sandbox start failed", "id", id, "err", err)
		return nil, "DOCKER::SANDBOX_START_FAILED", fmt.Errorf("Failed to start sandbox container: %s", hideHostPaths(err.Error()))
	}
	sb.rt = rt
	ep, err := newExecdEndpoint(s, sb)
	if err != nil {
		_ = sb.destroy()
		return nil, "DOCKER::SANDBOX_EXECD_START_FAILED", fmt.Errorf("Failed to start execd endpoint: %v", err)
	}
	sb.execd = ep

	now := s.clock.Now().UTC()
	sb.createdAt = now
	sb.changedAt = now
	sb.lastState = "Running"
	rec := &SandboxInfo{ID: id, Image: req.Image, CreatedAt: now, State: "Running", Reason: "CONTAINER_RUNNING",
		ExecdEndpoint: ep.Addr(), Egress: sb.egress != nil, Request: redacted}
	sb.record = rec

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = sb.destroy()
		return nil, "DOCKER::SANDBOX_START_FAILED", errors.New("server is shutting down")
	}
	if req.tenant != "" && s.released[req.tenant] { // released while it started (ReleaseTenant)
		s.mu.Unlock()
		_ = sb.destroy()
		return nil, "SANDBOX::INVALID_PARAMETER", errors.New("Quota exceeded: the API key's tenant has been released; it can create nothing more.")
	}
	if req.reserved { // the sandbox now counts as live instead
		s.unreserveLocked(req.tenant, req.limits)
		req.reserved = false
	}
	if req.Timeout != nil {
		exp := now.Add(time.Duration(*req.Timeout) * time.Second)
		sb.expiresAt = &exp
		s.scheduleLocked(sb)
	}
	s.sandboxes[id] = sb
	s.records = append(s.records, rec)
	s.mu.Unlock()
	s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindState,
		State: &wire.State{To: "Running", Reason: "created"}})
	return sb, "", nil
}

// scheduleLocked (re)arms the TTL timer. Caller holds s.mu.
func (s *Server) scheduleLocked(sb *sandbox) {
	if sb.timer != nil {
		sb.timer.Stop()
		sb.timer = nil
	}
	if sb.expiresAt == nil {
		return
	}
	id := sb.id
	d := sb.expiresAt.Sub(s.clock.Now())
	if d < 0 {
		d = 0
	}
	var t Timer
	t = s.clock.AfterFunc(d, func() {
		s.mu.Lock()
		cur, ok := s.sandboxes[id]
		stale := !ok || cur.timer != t
		s.mu.Unlock()
		if stale {
			return
		}
		_ = s.remove(id, "Expired", "ttl expired", true)
	})
	sb.timer = t
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	sb := s.lookupFor(r, id)
	if sb == nil {
		notFound(w, id)
		return
	}
	writeJSON(w, http.StatusOK, s.view(sb))
}

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.lookupFor(r, id) == nil {
		notFound(w, id)
		return
	}
	err := s.remove(id, "Deleted", "deleted by API", false)
	if errors.Is(err, ErrNotFound) {
		notFound(w, id)
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "DOCKER::SANDBOX_DELETE_FAILED", err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handlePause(w http.ResponseWriter, r *http.Request) {
	s.transition(w, r, pauseResume{to: "Paused", need: "Running", verb: "pause", past: "paused",
		conflict: "DOCKER::SANDBOX_NOT_RUNNING", failed: "DOCKER::SANDBOX_PAUSE_FAILED", paused: true,
		conflictText: "is not running (state %s); only a running sandbox can be paused."})
}

func (s *Server) handleResume(w http.ResponseWriter, r *http.Request) {
	s.transition(w, r, pauseResume{need: "Paused", to: "Running", raced: "Running", verb: "resume", past: "resumed",
		conflict: "DOCKER::SANDBOX_NOT_PAUSED", failed: "DOCKER::SANDBOX_RESUME_FAILED", paused: false,
		conflictText: "is not paused (state %s); only a paused sandbox can be resumed."})
}

// pauseResume describes one of the two synchronous transitions (CONTRACT §1.12).
type pauseResume struct {
	need, to, verb, past string
	raced                string // a state that, reached while the runtime call failed, is not a conflict
	conflict, failed     string // error codes: wrong state, runtime failure
	conflictText         string // after "Sandbox <id> ", with the state
	paused               bool   // the sandbox's paused flag afterwards
}

// transition pauses or resumes: 409 unless the sandbox is in the needed
// state (also when it left that state while the runtime call failed), 500
// when the runtime fails, else 202 with an empty body and a state event.
func (s *Server) transition(w http.ResponseWriter, r *http.Request, t pauseResume) {
	id := r.PathValue("id")
	sb := s.lookupFor(r, id)
	if sb == nil {
		notFound(w, id)
		return
	}
	conflict := func(state string) {
		writeError(w, http.StatusConflict, t.conflict, fmt.Sprintf("Sandbox %s "+t.conflictText, id, state))
	}
	sb.trMu.Lock()
	defer sb.trMu.Unlock()
	if st := s.statusOf(sb); st.State != t.need {
		conflict(st.State)
		return
	}
	op := sb.rt.Pause
	if !t.paused {
		op = sb.rt.Resume
	}
	if err := op(); err != nil {
		if st := s.statusOf(sb); st.State != t.need && (t.raced == "" || st.State != t.raced) {
			conflict(st.State)
			return
		}
		writeError(w, http.StatusInternalServerError, t.failed, fmt.Sprintf("Failed to %s sandbox %s: %v", t.verb, id, err))
		return
	}
	sb.stMu.Lock()
	sb.paused = t.paused
	sb.changedAt = s.clock.Now().UTC()
	sb.lastState = t.to
	sb.stMu.Unlock()
	s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindState, State: &wire.State{From: t.need, To: t.to, Reason: t.past}})
	w.WriteHeader(http.StatusAccepted)
}

// parseRFC3339 accepts RFC 3339 (with or without fraction), and like
// pydantic a date alone and a time without seconds; a naive time is UTC.
// Surrounding whitespace is refused, as the real server does.
func parseRFC3339(v string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02", "2006-01-02T15:04", "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func (s *Server) handleRenew(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	obj, generic, bad := decodeObject(readBody(r))
	if bad != nil {
		writeValidation(w, *bad)
		return
	}
	raw, ok := obj["expiresAt"]
	if !ok {
		writeValidation(w, vMissing([]any{"body", "expiresAt"}, generic))
		return
	}
	when, bad := parseExpiresAt(raw)
	if bad != nil {
		writeValidation(w, *bad)
		return
	}
	sb := s.lookupFor(r, id)
	if sb == nil {
		notFound(w, id)
		return
	}
	s.mu.Lock()
	if sb.expiresAt == nil {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, "DOCKER::INVALID_EXPIRATION",
			fmt.Sprintf("Sandbox %s does not have automatic expiration enabled.", id))
		return
	}
	if !when.After(s.clock.Now()) {
		s.mu.Unlock()
		writeError(w, http.StatusBadRequest, "DOCKER::INVALID_EXPIRATION", "New expiration time must be in the future.")
		return
	}
	when = when.UTC().Truncate(time.Microsecond)
	sb.expiresAt = &when
	s.scheduleLocked(sb)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"expiresAt": formatTime(when)})
}

func (s *Server) handlePatchMetadata(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	obj, _, bad := decodeObject(readBody(r))
	if bad != nil {
		writeValidation(w, *bad)
		return
	}
	patch := map[string]*string{}
	var verrs []validationItem
	for k, raw := range obj {
		if isNull(raw) {
			patch[k] = nil
			continue
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			verrs = append(verrs, vType("string_type", []any{"body", k}, rawValue(raw), "Input should be a valid string"))
			continue
		}
		patch[k] = &v
	}
	if len(verrs) > 0 {
		writeValidation(w, verrs...)
		return
	}
	for k, v := range patch {
		if isReserved(k) {
			writeError(w, http.StatusBadRequest, "INVALID_METADATA_LABEL",
				fmt.Sprintf("metadata key %q uses the reserved prefix %s", k, reservedPrefix))
			return
		}
		if err := checkLabelKey(k); err != nil {
			writeError(w, http.StatusBadRequest, "SANDBOX::INVALID_METADATA_LABEL", err.Error())
			return
		}
		if v != nil {
			if err := checkLabelValue(k, *v); err != nil {
				writeError(w, http.StatusBadRequest, "SANDBOX::INVALID_METADATA_LABEL", err.Error())
				return
			}
		}
	}
	sb := s.lookupFor(r, id)
	if sb == nil {
		notFound(w, id)
		return
	}
	s.mu.Lock()
	merged := map[string]string{}
	for k, v := range sb.metadata {
		merged[k] = v
	}
	for k, v := range patch {
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = *v
		}
	}
	sb.metadata = merged
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, s.view(sb))
}

// loopbackProxier is an EgressAttachment that can serve its gateway to a
// sandbox without a network namespace (egress.Attachment.LoopbackProxy).
type loopbackProxier interface {
	LoopbackProxy() (map[string]string, error)
}

// networkEnforced says whether the runtime gives each sandbox a network of
// its own (a namespace whose only way out is the egress sidecar).
func (s *Server) networkEnforced() bool { return s.cfg.Runtime.Enforced()["network"] }

// egressEnforcement is /_mock/info's egress_enforcement: "network" (every
// connection of a sandbox with a policy goes through its gateway), "proxy"
// (only clients that honour HTTP(S)_PROXY do: a process can bypass it), ""
// (no egress hub).
func (s *Server) egressEnforcement() string {
	switch {
	case s.cfg.Egress == nil:
		return ""
	case s.networkEnforced():
		return "network"
	}
	return "proxy"
}
