package mockserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// Snapshots as OpenSandbox 1.1.1 has them on Docker (CONTRACT §1.13;
// services/snapshot_service.py, services/docker/snapshot_runtime.py): create
// answers 202 Creating (Location: /v1/snapshots/{id}) and a worker moves the
// snapshot to Ready or Failed; list (sandboxId, name, state filters,
// pagination), get, delete (409 while Creating); a create with snapshotId
// restores it into a new sandbox (404 unknown, 409 not Ready; entrypoint
// defaults to tail -f /dev/null; the sandbox carries snapshotId, no image).
//
// Where Docker commits the container's filesystem layer, the bundled server
// copies what a sandbox can change: its writable directories /workspace,
// /tmp, /root and /var (the rest of its root is read-only; volumes and
// /dev/shm are mounts docker commit leaves out too). It copies regular files
// with their permission bits, through the same walker as the canary scan
// (nothing the sandbox controls is followed); symbolic links, special files,
// owners and empty directories are not kept (deviation snapshots-files).
// Snapshots belong to the tenant of the key that made them and are kept in
// memory and under the state directory until deleted or the server closes.

// Bounds of one snapshot and of the server's snapshots (together at most
// snapshotBudget bytes on the host's disk: submissions are untrusted).
const (
	snapshotMaxBytes   = 512 << 20
	snapshotBudget     = 2 << 30
	snapshotMaxEntries = 20000
	snapshotMaxCount   = 64
	snapshotWalkTime   = 60 * time.Second
)

// snapshotDirs are the in-sandbox directories a snapshot keeps, and the
// name each is stored under.
var snapshotDirs = map[string]string{"/workspace": "workspace", "/tmp": "tmp", "/root": "root", "/var": "var"}

type snapshotRec struct {
	id, sandboxID  string
	name           *string
	state, reason  string
	message        string
	transitionAt   time.Time
	createdAt      time.Time
	keyFP          string          // the key that made it (tenancy)
	image          string          // the source's image, whose profile a restore runs
	profile        runtime.Profile // that profile
	dir            string          // host copy: dir/<snapshotDirs name>
	restoring      int             // restores copying from dir right now
	bytes          int64           // what its copy holds (counted against snapshotBudget)
	sourceRestored string          // the source's own snapshotId, when it was a restore
}

type snapshotStatusJSON struct {
	State            string `json:"state"`
	Reason           string `json:"reason,omitempty"`
	Message          string `json:"message,omitempty"`
	LastTransitionAt string `json:"lastTransitionAt,omitempty"`
}

type snapshotJSON struct {
	ID        string             `json:"id"`
	SandboxID string             `json:"sandboxId"`
	Name      *string            `json:"name,omitempty"`
	Status    snapshotStatusJSON `json:"status"`
	CreatedAt string             `json:"createdAt"`
}

type snapshotStore struct {
	mu    sync.Mutex
	byID  map[string]*snapshotRec
	bytes int64 // held by every copy, Creating ones included
	wg    sync.WaitGroup
	alive bool
}

// take reserves n bytes of the budget for rec (false: it is spent).
func (st *snapshotStore) take(rec *snapshotRec, n int64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.bytes+n > snapshotBudget {
		return false
	}
	st.bytes += n
	rec.bytes += n
	return true
}

// release gives rec's bytes back (its copy is removed).
func (st *snapshotStore) release(rec *snapshotRec) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.bytes -= rec.bytes
	rec.bytes = 0
}

func (s *Server) snapshotRoot() string {
	if s.cfg.StateDir == "" {
		return ""
	}
	return filepath.Join(s.cfg.StateDir, "snapshots")
}

func (rec *snapshotRec) view() snapshotJSON {
	return snapshotJSON{ID: rec.id, SandboxID: rec.sandboxID, Name: rec.name,
		Status:    snapshotStatusJSON{State: rec.state, Reason: rec.reason, Message: rec.message, LastTransitionAt: formatTime(rec.transitionAt)},
		CreatedAt: formatTime(rec.createdAt)}
}

// snapshotVisible: a snapshot is seen by keys of its maker's tenant (or by
// untenanted keys), as a sandbox is.
func (s *Server) snapshotVisible(r *http.Request, rec *snapshotRec) bool {
	tenant := s.requestTenant(r)
	if tenant == "" {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return rec.keyFP != "" && s.tenants[rec.keyFP] == tenant
}

func snapshotNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, "SNAPSHOT::NOT_FOUND", fmt.Sprintf("Snapshot %s not found", id))
}

// handleSnapshots serves every snapshot route.
func (s *Server) handleSnapshots(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.PathValue("id") != "":
		s.snapshotCreate(w, r)
	case r.PathValue("sid") != "" && r.Method == http.MethodDelete:
		s.snapshotDelete(w, r)
	case r.PathValue("sid") != "":
		s.snapshotGet(w, r)
	default:
		s.snapshotList(w, r)
	}
}

func (s *Server) snapshotCreate(w http.ResponseWriter, r *http.Request) {
	var name *string
	if body := readBody(r); len(strings.TrimSpace(string(body))) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			writeValidation(w, vType("model_attributes_type", []any{"body"}, string(body), "Input should be a valid dictionary or object to extract fields from"))
			return
		}
		if raw, ok := obj["name"]; ok && !isNull(raw) {
			var n string
			if err := json.Unmarshal(raw, &n); err != nil {
				writeValidation(w, vType("string_type", []any{"body", "name"}, rawValue(raw), "Input should be a valid string"))
				return
			}
			if n == "" {
				writeValidation(w, validationItem{Type: "string_too_short", Loc: []any{"body", "name"}, Input: n,
					Msg: "String should have at least 1 character", Ctx: map[string]any{"min_length": 1}})
				return
			}
			name = &n
		}
	}
	id := r.PathValue("id")
	sb := s.lookupFor(r, id)
	if sb == nil {
		notFound(w, id)
		return
	}
	if s.view(sb).Status.State != "Running" {
		writeError(w, http.StatusConflict, "SNAPSHOT::INVALID_SOURCE_STATE", "Snapshot can only be created from a Running sandbox.")
		return
	}
	root := s.snapshotRoot()
	if root == "" {
		writeError(w, http.StatusNotImplemented, "SNAPSHOT::NOT_IMPLEMENTED", "Snapshots need the server's state directory (--state-dir), which this server has not.")
		return
	}
	profile, err := s.cfg.ProfileFor(sb.image)
	if sb.image == "" {
		profile, err = sb.restoredProfile, nil
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, "SNAPSHOT::RUNTIME_CREATE_FAILED", fmt.Sprintf("Failed to create snapshot runtime object: %v", err))
		return
	}
	now := s.clock.Now().UTC()
	rec := &snapshotRec{id: newUUID(), sandboxID: id, name: name, state: "Creating", reason: "snapshot_accepted",
		message: "Snapshot creation accepted.", transitionAt: now, createdAt: now, image: sb.image, profile: profile,
		sourceRestored: sb.snapshotID}
	if k := r.Header.Get(headerAPIKey); k != "" {
		rec.keyFP = Fingerprint(k)
	}
	rec.dir = filepath.Join(root, rec.id)
	st := &s.snaps
	st.mu.Lock()
	if !st.alive {
		st.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "SNAPSHOT::RUNTIME_CREATE_FAILED", "The server is shutting down.")
		return
	}
	if len(st.byID) >= snapshotMaxCount {
		st.mu.Unlock()
		writeError(w, http.StatusConflict, "SNAPSHOT::RUNTIME_PREFLIGHT_FAILED",
			fmt.Sprintf("This server keeps at most %d snapshots; delete one first.", snapshotMaxCount))
		return
	}
	st.byID[rec.id] = rec
	st.wg.Add(1)
	st.mu.Unlock()
	go func() {
		defer st.wg.Done()
		state, reason, msg := "Ready", "snapshot_runtime_ready", "Snapshot of the sandbox's writable directories created successfully."
		if err := captureSnapshot(sb.rt, rec.dir, func(n int64) bool { return st.take(rec, n) }); err != nil {
			_ = os.RemoveAll(rec.dir)
			st.release(rec)
			state, reason, msg = "Failed", "snapshot_runtime_failed", err.Error()
		}
		st.mu.Lock()
		rec.state, rec.reason, rec.message, rec.transitionAt = state, reason, msg, s.clock.Now().UTC()
		st.mu.Unlock()
	}()
	st.mu.Lock()
	v := rec.view()
	st.mu.Unlock()
	w.Header().Set("Location", "/v1/snapshots/"+rec.id)
	writeJSON(w, http.StatusAccepted, v)
}

// captureSnapshot copies the sandbox's writable directories' regular files
// (bounded) into dir; take reserves each file's bytes from the server's
// budget before it is copied.
func captureSnapshot(sb runtime.Sandbox, dir string, take func(int64) bool) error {
	var total int64
	entries := 0
	deadline := time.Now().Add(snapshotWalkTime)
	var failed error
	for _, wd := range runtime.Writable(sb) {
		sub, ok := snapshotDirs[wd.Path]
		if !ok || wd.Volume {
			continue
		}
		base := filepath.Join(dir, sub)
		if err := os.MkdirAll(base, 0o700); err != nil {
			return err
		}
		res, err := wd.Walk(snapshotMaxEntries-entries, deadline, func(e runtime.WalkEntry) {
			if failed != nil || e.File == nil || !e.Mode.IsRegular() || !filepath.IsLocal(filepath.FromSlash(e.Rel)) {
				return
			}
			if total+e.Size > snapshotMaxBytes {
				failed = fmt.Errorf("the sandbox's writable directories hold more than %d MiB; this server snapshots at most that", snapshotMaxBytes>>20)
				return
			}
			if !take(e.Size) {
				failed = fmt.Errorf("this server's snapshots already hold %d MiB, all it keeps; delete one first", snapshotBudget>>20)
				return
			}
			dst := filepath.Join(base, filepath.FromSlash(e.Rel))
			if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
				failed = err
				return
			}
			f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.Mode.Perm())
			if err != nil {
				failed = err
				return
			}
			n, err := io.Copy(f, io.LimitReader(e.File, e.Size))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err == nil {
				err = os.Chmod(dst, e.Mode.Perm()) // the umask narrowed it
			}
			total += n
			if err == nil && total > snapshotMaxBytes {
				err = fmt.Errorf("the sandbox's writable directories hold more than %d MiB; this server snapshots at most that", snapshotMaxBytes>>20)
			}
			if err != nil {
				failed = err
			}
		})
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", wd.Path, err)
		}
		if failed != nil {
			return failed
		}
		entries += res.Entries
		if res.Cut != "" {
			return fmt.Errorf("%s holds more than this server snapshots (%d entries, %s)", wd.Path, snapshotMaxEntries, snapshotWalkTime)
		}
	}
	return nil
}

// snapshotOf is the request's {sid} snapshot, visible to its key; nil after
// the 404 was written.
func (s *Server) snapshotOf(w http.ResponseWriter, r *http.Request) (string, *snapshotRec) {
	sid := r.PathValue("sid")
	st := &s.snaps
	st.mu.Lock()
	rec := st.byID[sid]
	st.mu.Unlock()
	if rec == nil || !s.snapshotVisible(r, rec) {
		snapshotNotFound(w, sid)
		return sid, nil
	}
	return sid, rec
}

func (s *Server) snapshotGet(w http.ResponseWriter, r *http.Request) {
	st := &s.snaps
	_, rec := s.snapshotOf(w, r)
	if rec == nil {
		return
	}
	st.mu.Lock()
	v := rec.view()
	st.mu.Unlock()
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) snapshotDelete(w http.ResponseWriter, r *http.Request) {
	st := &s.snaps
	sid, rec := s.snapshotOf(w, r)
	if rec == nil {
		return
	}
	st.mu.Lock()
	switch {
	case rec.state == "Creating":
		st.mu.Unlock()
		writeError(w, http.StatusConflict, "SNAPSHOT::INVALID_STATE", fmt.Sprintf("Snapshot %s is still being created and cannot be deleted", sid))
		return
	case rec.restoring > 0:
		st.mu.Unlock()
		writeError(w, http.StatusConflict, "SNAPSHOT::INVALID_STATE", fmt.Sprintf("Snapshot %s is being restored and cannot be deleted now", sid))
		return
	}
	delete(st.byID, sid)
	st.mu.Unlock()
	_ = os.RemoveAll(rec.dir)
	st.release(rec)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) snapshotList(w http.ResponseWriter, r *http.Request) {
	q := pyQuery(r.URL.RawQuery)
	var errs []validationItem
	page, bad := queryInt(q, "page", 1, 1, 0)
	if bad != nil {
		errs = append(errs, *bad)
	}
	size, bad := queryInt(q, "pageSize", 20, 1, 200)
	if bad != nil {
		errs = append(errs, *bad)
	}
	if len(errs) > 0 {
		writeValidation(w, errs...)
		return
	}
	last := func(k string) (string, bool) {
		v, ok := q[k]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[len(v)-1], true
	}
	sandboxID, bySandbox := last("sandboxId")
	name, byName := last("name")
	states := map[string]bool{}
	for _, v := range q["state"] {
		states[v] = true
	}
	st := &s.snaps
	st.mu.Lock()
	all := make([]*snapshotRec, 0, len(st.byID))
	for _, rec := range st.byID {
		all = append(all, rec)
	}
	st.mu.Unlock()
	items := make([]snapshotJSON, 0)
	for _, rec := range all {
		if !s.snapshotVisible(r, rec) {
			continue
		}
		st.mu.Lock()
		v := rec.view()
		st.mu.Unlock()
		if (bySandbox && v.SandboxID != sandboxID) || (byName && (v.Name == nil || *v.Name != name)) ||
			(len(states) > 0 && !states[v.Status.State]) {
			continue
		}
		items = append(items, v)
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].CreatedAt == items[j].CreatedAt {
			return items[i].ID > items[j].ID
		}
		return items[i].CreatedAt > items[j].CreatedAt
	})
	total := len(items)
	pages := (total + size - 1) / size
	pageItems := make([]snapshotJSON, 0)
	if start := (page - 1) * size; page-1 <= total/size && start < total {
		pageItems = items[start:min(start+size, total)]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"items":      pageItems,
		"pagination": pagination{Page: page, PageSize: size, TotalItems: total, TotalPages: pages, HasNextPage: page < pages},
	})
}

// resolveSnapshot finds the snapshot a create restores, as 1.1.1's
// resolve_sandbox_image_from_request: unknown (or another tenant's) → 404,
// not Ready → 409. On success the snapshot is held against deletion until
// release is called.
func (s *Server) resolveSnapshot(r *http.Request, sid string) (rec *snapshotRec, release func(), status int, code, msg string) {
	st := &s.snaps
	st.mu.Lock()
	rec = st.byID[sid]
	st.mu.Unlock()
	if rec == nil || !s.snapshotVisible(r, rec) {
		return nil, nil, http.StatusNotFound, "SNAPSHOT::NOT_FOUND", fmt.Sprintf("Snapshot %s not found", sid)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if rec.state != "Ready" || st.byID[sid] != rec {
		return nil, nil, http.StatusConflict, "SNAPSHOT::NOT_READY", fmt.Sprintf("Snapshot %s is not ready for restore.", sid)
	}
	rec.restoring++
	return rec, func() {
		st.mu.Lock()
		rec.restoring--
		st.mu.Unlock()
	}, 0, "", ""
}

// seed is what a restore copies into the new sandbox (runtime.Spec.Seed).
func (rec *snapshotRec) seed() map[string]string {
	out := map[string]string{}
	for path, sub := range snapshotDirs {
		out[path] = filepath.Join(rec.dir, sub)
	}
	return out
}

// snapshotSupport is /_mock/info's "snapshots": what a snapshot keeps here
// ("writable_directories"), or "not_implemented" without a state directory.
func (s *Server) snapshotSupport() string {
	if s.snapshotRoot() == "" {
		return "not_implemented"
	}
	return "writable_directories"
}

// startSnapshots opens the store; snapshots of an earlier run of this state
// directory are gone with it (they live in memory), so their copies are removed.
func (s *Server) startSnapshots() {
	s.snaps.mu.Lock()
	s.snaps.byID = map[string]*snapshotRec{}
	s.snaps.alive = true
	s.snaps.mu.Unlock()
	if root := s.snapshotRoot(); root != "" {
		_ = os.RemoveAll(root)
	}
}

// closeSnapshots waits for captures in flight and removes every copy.
func (s *Server) closeSnapshots() {
	s.snaps.mu.Lock()
	s.snaps.alive = false
	s.snaps.mu.Unlock()
	s.snaps.wg.Wait()
	if root := s.snapshotRoot(); root != "" {
		_ = os.RemoveAll(root)
	}
}
