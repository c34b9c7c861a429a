package mockserver

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// ErrNotFound is returned by Go API calls naming an unknown (or already
// removed) sandbox.
var ErrNotFound = errors.New("sandbox not found")

// Server is the bundled lifecycle server.
type Server struct {
	cfg   Config
	clock Clock
	log   *slog.Logger
	audit *audit.Store

	ln      net.Listener
	httpSrv *http.Server
	handler http.Handler

	mu        sync.Mutex
	sandboxes map[string]*sandbox
	records   []*SandboxInfo // every sandbox created this run, in creation order
	canaries  map[string]string
	markers   map[string]string // input markers (label → value): watched in forwarded requests, never in a sandbox
	// egressDenyByKey: drill D1 keyed to one subject (key fingerprint →
	// targets its new sandboxes deny).
	egressDenyByKey map[string][]string
	capacity        map[string]*capacityFault // drill D3: creates answer 429 while a rule covers them (by key fingerprint; "" every create)
	// keyedFaults: the keyed execd faults adminRoutes registers
	// (keyed_fault.go), milestone M1's execd fault among them.
	keyedFaults keyedFaults
	apiKeys     [][]byte          // accepted keys: cfg.APIKey plus AddAPIKey
	tenants     map[string]string // key fingerprint → tenant (tenancy.go; a mock extension, empty unless asked for)
	pending     map[string]*usage // tenant → creates still starting, held against its quota (quota.go)
	released    map[string]bool   // tenants released (ReleaseTenant): their keys are revoked
	revoked     bool              // some key was revoked: no key left never means auth is off
	closed      bool
	stopWatch   chan struct{}
	wg          sync.WaitGroup
	lingers     lingerSet // removed sandboxes' execd ports in their grace period
	volumes     volumeStore
	snaps       snapshotStore // snapshots.go
}

// New validates cfg and builds a Server; call Start to listen.
func New(cfg Config) (*Server, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("mockserver: Config.Runtime is required")
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	if cfg.Clock == nil {
		cfg.Clock = RealClock{}
	}
	if cfg.ProfileFor == nil {
		cfg.ProfileFor = runtime.ProfileFor
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	path := ""
	if cfg.StateDir != "" {
		path = filepath.Join(cfg.StateDir, "audit.jsonl")
	}
	st, err := audit.NewStore(path, cfg.Clock.Now)
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:       cfg,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		audit:     st,
		sandboxes: map[string]*sandbox{},
		canaries:  map[string]string{},
		stopWatch: make(chan struct{}),
	}
	if cfg.APIKey != "" {
		if cfg.NoAuth {
			_ = st.Close()
			return nil, errors.New("mockserver: NoAuth with an APIKey: choose one")
		}
		s.apiKeys = [][]byte{[]byte(cfg.APIKey)}
	}
	s.handler = s.buildHandler()
	s.startSnapshots()
	return s, nil
}

// ErrAuthOff is AddAPIKey's and AddAPIKeyTenant's answer on a server
// started with NoAuth: it checks no key, so a key would tell nothing apart.
var ErrAuthOff = errors.New("mockserver: authentication is off (NoAuth): no API key can be added")

// AddAPIKey makes another OPEN-SANDBOX-API-KEY valid (e.g. one per subject,
// so the audit's key fingerprints tell the harness's calls from a subject's).
func (s *Server) AddAPIKey(key string) error {
	if key == "" {
		return errors.New("mockserver: empty API key")
	}
	if s.cfg.NoAuth {
		return ErrAuthOff
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKeys = append(s.apiKeys, []byte(key))
	return nil
}

// keyOK compares key against every accepted key in constant time; with no
// key configured at all, auth is off (as the real server with no api_key).
func (s *Server) keyOK(key string) (authOff, ok bool) {
	if s.cfg.NoAuth {
		return true, true
	}
	s.mu.Lock()
	keys, revoked := s.apiKeys, s.revoked
	s.mu.Unlock()
	if len(keys) == 0 && !revoked {
		return true, true
	}
	match := 0
	for _, k := range keys {
		match |= subtle.ConstantTimeCompare([]byte(key), k)
	}
	return false, match == 1
}

// Handler is the lifecycle+admin HTTP handler (for embedding in tests).
func (s *Server) Handler() http.Handler { return s.handler }

// Start listens on cfg.Listen and serves in the background. Cancelling ctx
// closes the server (as Close does).
func (s *Server) Start(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		_ = s.audit.Close()
		return fmt.Errorf("mockserver: listen %s: %w", s.cfg.Listen, err)
	}
	s.ln = ln
	// IdleTimeout: a client's idle keep-alive connections end (a confined
	// box's cost the grader descriptors); it applies between requests only,
	// so a long SSE stream is never cut. Same values as harness/confine's.
	s.httpSrv = &http.Server{Handler: s.handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		if err := s.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("lifecycle server stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		s.watch()
	}()
	if ctx != nil {
		go func() {
			select {
			case <-ctx.Done():
				_ = s.Close()
			case <-s.stopWatch:
			}
		}()
	}
	return nil
}

// URL is the base URL, e.g. http://127.0.0.1:41234 (no /v1).
func (s *Server) URL() string { return "http://" + s.Domain() }

// Domain is host:port, the OPEN_SANDBOX_DOMAIN value.
func (s *Server) Domain() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Close stops the listener, cancels every TTL timer, kills and removes every
// sandbox and closes the audit file. It does not close cfg.Runtime or
// cfg.Egress (their owner does). Safe to call twice.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stopWatch)
	ids := make([]string, 0, len(s.sandboxes))
	for id := range s.sandboxes {
		ids = append(ids, id)
	}
	s.mu.Unlock()

	var errs []error
	if s.httpSrv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			_ = s.httpSrv.Close()
		}
		cancel()
	}
	for _, id := range ids {
		if err := s.remove(id, "Deleted", "server shutdown", false); err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	s.lingers.closeAll()
	s.closeSnapshots()
	s.wg.Wait()
	s.releaseAllTenantVolumes() // every tenant's volumes end with the server (tenantvolumes.go)
	s.closeVolumeRegistries()
	if err := s.audit.Close(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Audit returns every audit event so far.
func (s *Server) Audit() []wire.Event { return s.audit.Events(audit.Query{}) }

// AuditQuery returns the events matching q.
func (s *Server) AuditQuery(q audit.Query) []wire.Event { return s.audit.Events(q) }

// Recorder is the audit recorder (for wiring the egress hub to the same trail).
func (s *Server) Recorder() audit.Recorder { return s.audit }

// ExpireNow expires a sandbox as its TTL would (kill, remove, GET → 404),
// recording the reason "expired by admin".
func (s *Server) ExpireNow(id string) error {
	return s.remove(id, "Expired", "expired by admin", true)
}

// Sandboxes describes every sandbox created this run, newest first, with
// their create requests (env values fingerprinted) and final states.
func (s *Server) Sandboxes() []SandboxInfo {
	s.mu.Lock()
	live := map[string]*sandbox{}
	for id, sb := range s.sandboxes {
		live[id] = sb
	}
	recs := make([]SandboxInfo, 0, len(s.records))
	for _, r := range s.records {
		recs = append(recs, *r)
	}
	s.mu.Unlock()
	for i := range recs {
		if sb, ok := live[recs[i].ID]; ok {
			st := s.statusOf(sb)
			recs[i].State, recs[i].Reason = st.State, st.Reason
		}
	}
	sort.SliceStable(recs, func(i, j int) bool { return recs[i].CreatedAt.After(recs[j].CreatedAt) })
	return recs
}

// SandboxInfo is the admin view of one sandbox (GET /_mock/sandboxes).
type SandboxInfo struct {
	ID            string          `json:"id"`
	Image         string          `json:"image,omitempty"`
	CreatedAt     time.Time       `json:"created_at"`
	Request       json.RawMessage `json:"request,omitempty"` // env values fingerprinted
	State         string          `json:"state"`
	Reason        string          `json:"reason,omitempty"`
	Deleted       bool            `json:"deleted"`
	Expired       bool            `json:"expired"`
	EndedAt       *time.Time      `json:"ended_at,omitempty"`
	ExecdEndpoint string          `json:"execd_endpoint,omitempty"`
	Egress        bool            `json:"egress"`
}

func (s *Server) lookup(id string) *sandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sandboxes[id]
}

// remove takes a sandbox out of the table and destroys it. to is the final
// state recorded (Deleted or Expired).
//
// The removal takes effect at one instant: the registry forgets the sandbox
// and its execd endpoint is marked gone under s.mu, before anything is torn
// down. From then on every request for it answers as for an unknown sandbox
// (lifecycle and proxy routes 404, the execd endpoint a reset connection),
// also the requests already in flight that lose their execd mid-way (see
// answersGone, handleServerProxy and execdEndpoint.refuse); never a 5xx.
// Only then is its execd endpoint cut (its in-flight commands recorded as
// killed), its final record taken and the runtime destroyed.
func (s *Server) remove(id, to, reason string, expired bool) error {
	s.mu.Lock()
	sb, ok := s.sandboxes[id]
	if !ok {
		s.mu.Unlock()
		return ErrNotFound
	}
	delete(s.sandboxes, id)
	if sb.execd != nil {
		sb.execd.removing.Store(true)
	}
	if sb.timer != nil {
		sb.timer.Stop()
		sb.timer = nil
	}
	now := s.clock.Now().UTC()
	for _, r := range s.records {
		if r.ID == id {
			r.State = to
			r.Reason = reason
			r.Deleted = !expired
			r.Expired = expired
			r.EndedAt = &now
		}
	}
	s.mu.Unlock()

	if sb.execd != nil {
		// Cut at once, before anything that may wait on the runtime, and not
		// after the final record: the final record stops the sandbox's
		// processes, execd included, and a call still served meanwhile
		// would meet a dead execd (the 502 window of issue 27).
		sb.execd.cut(reason)
	}
	from := s.statusOf(sb).State
	s.finalRecord(id, sb)
	err := sb.destroy()
	s.releaseVolumes(sb.volumeClaims)
	s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindState,
		State: &wire.State{From: from, To: to, Reason: reason}})
	if err != nil {
		s.log.Warn("destroy sandbox", "id", id, "err", err)
	}
	return err
}

// watch notices entrypoint exits (Running → Terminated/Failed) and records them.
func (s *Server) watch() {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-s.stopWatch:
			return
		case <-t.C:
			s.mu.Lock()
			live := make([]*sandbox, 0, len(s.sandboxes))
			for _, sb := range s.sandboxes {
				live = append(live, sb)
			}
			s.mu.Unlock()
			for _, sb := range live {
				s.statusOf(sb)
			}
		}
	}
}
