package mockserver

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// adminHandler is the /_mock admin API (a documented mock extension),
// guarded by its own X-Mock-Admin-Token header.
func (s *Server) adminHandler() http.Handler {
	mux := &routeMux{ServeMux: http.NewServeMux()}
	s.adminRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "MOCK::NOT_FOUND", "unknown admin route "+r.Method+" "+r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.Header.Get(headerAdminToken)
		switch {
		case s.cfg.AdminToken == "":
			writeError(w, http.StatusUnauthorized, "MOCK::ADMIN_DISABLED",
				"The admin API is disabled: start the server with an admin token (--admin-token).")
		case tok == "":
			writeError(w, http.StatusUnauthorized, "MOCK::MISSING_ADMIN_TOKEN",
				"Admin credentials are missing. Provide the token via the X-Mock-Admin-Token header.")
		case subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.AdminToken)) != 1:
			writeError(w, http.StatusUnauthorized, "MOCK::INVALID_ADMIN_TOKEN", "Admin credentials are invalid.")
		default:
			mux.ServeHTTP(w, r)
		}
	})
}

// routeMux is a ServeMux that keeps each admin route registered on it with
// its usage line: the route lists of doc.go and README.md are generated from
// them (TestAdminRoutesAreDocumented; go test ./mock-server -run
// TestAdminRoutesAreDocumented -update rewrites both).
type routeMux struct {
	*http.ServeMux
	routes []adminRoute
}

// adminRoute is one admin route and how it is used.
type adminRoute struct {
	Pattern string // "METHOD /_mock/path"
	// Usage follows the path in the lists: its query or body (none for a
	// route that takes neither), two spaces, then its answer and what it
	// does: `[?key_fingerprint=…]  204: clears that rule`.
	Usage string
}

// route registers h for pattern, with its usage line.
func (m *routeMux) route(pattern, usage string, h func(http.ResponseWriter, *http.Request)) {
	m.routes = append(m.routes, adminRoute{pattern, usage})
	m.ServeMux.HandleFunc(pattern, h)
}

// adminRoutes registers every admin route with its usage line. A new one (a
// fault route, say) goes here only: doc.go's and README.md's route lists are
// generated from these (TestAdminRoutesAreDocumented fails while they are
// stale; -update rewrites them).
func (s *Server) adminRoutes(mux *routeMux) {
	mux.route("GET /_mock/info", `  200 {"version","isolation":{"enforced","reason"},"limits":{…},"snapshots":"writable_directories"|"not_implemented","egress":bool,"egress_enforcement":"network"|"proxy","audit_seq":N}`, s.adminInfo)
	mux.route("GET /_mock/audit", `[?sandbox_id=&kind=&since=SEQ&key_fingerprint=FP]  200 {"events":[wire.Event…],"last_seq":N} (kind e.g. command, file, execd_after_removal; key_fingerprint: the lifecycle calls made with that key and every event of the sandboxes it created; last_seq: the cursor for the next since)`, s.adminAudit)
	mux.route("GET /_mock/sandboxes", `  200 {"sandboxes":[SandboxInfo…]}: every sandbox of this run`, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"sandboxes": s.Sandboxes()})
	})
	mux.route("POST /_mock/sandboxes/{id}/expire", "  204 (as a TTL expiry: kill, remove, GET → 404); 404 unknown", func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if err := s.ExpireNow(id); errors.Is(err, ErrNotFound) {
			notFound(w, id)
			return
		} else if err != nil {
			writeError(w, http.StatusInternalServerError, "DOCKER::SANDBOX_DELETE_FAILED", err.Error())
			return
		}
		s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindFault,
			Fault: &wire.Fault{Name: "expire-now", Active: true, Detail: "expired by admin"}})
		w.WriteHeader(http.StatusNoContent)
	})
	mux.route("POST /_mock/faults/egress-deny", `{"targets":[…][,"key_fingerprint":"…"]}  204: every sandbox (or every sandbox created with that key from then on) denies them (409 without an egress hub)`, s.adminEgressDeny)
	mux.route("DELETE /_mock/faults/egress-deny", "[?key_fingerprint=…]  204: clears that rule (409 without an egress hub)", s.adminEgressDeny)
	mux.route("POST /_mock/faults/capacity", `{"retry_after_seconds":N[,"key_fingerprint":"…"]}  204: every create (or every create with that key) answers 429 + Retry-After`, s.adminCapacity)
	mux.route("DELETE /_mock/faults/capacity", "[?key_fingerprint=…]  204: clears that rule", s.adminCapacity)
	mux.keyedExecdFault(s, "execd", `{"key_fingerprint":"…","call":N,"status":5xx}  204: the Nth execd operation (command, upload, download, file operation) of each sandbox created with that key answers the status (audited)`, &execdFault{})
	mux.route("POST /_mock/api-keys", `{"key":"…"[,"tenant":"…"]}  204: the key is accepted from now on; with a tenant (key tenancy, off unless asked for; tenancy.go) its lifecycle calls see only the sandboxes created by keys of that tenant, any other answers 404 as unknown; 400 for an empty key, a bad tenant, a key already in another tenant or a released tenant`, s.adminAPIKeys)
	mux.route("POST /_mock/tenants/release", `{"tenant":"…"}  200 wire.TenantRelease: the tenant's keys revoked, its sandboxes (processes, cgroups, mounts), snapshots and named volumes removed (release.go); 400 for a bad body`, s.adminReleaseTenant)
	mux.route("PUT /_mock/canaries", `{"canaries":{label:value}}  204 (must keep every planted canary: add-only, else 409)`, s.adminCanaries)
	mux.route("POST /_mock/canaries", `{"canaries":{label:value}}  204 (adds; changing a planted value is 409)`, s.adminCanaries)
	mux.route("POST /_mock/markers", `{"markers":{label:value}}  204: input markers (values of the run's input data, at least 12 characters): the canary scan never looks for them, the egress gateway looks for them in what it forwards`, s.adminMarkers)
	mux.route("GET /_mock/sandboxes/{id}/canary-scan", `  200 {"findings":[wire.Canary…]} (labels, never values)`, func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		findings, err := s.CanaryScan(id)
		if errors.Is(err, ErrNotFound) {
			notFound(w, id)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"findings": findings})
	})
}

// Info is the GET /_mock/info body.
type Info struct {
	Version   string          `json:"version"`
	Isolation InfoIsolation   `json:"isolation"`
	Limits    map[string]bool `json:"limits"`
	Snapshots string          `json:"snapshots"`
	Egress    bool            `json:"egress"`
	// EgressEnforcement says how a sandbox's networkPolicy is enforced:
	// "network" (its network namespace's only way out is the egress
	// gateway), "proxy" (no namespace, insecure mode: only clients that
	// honour the HTTP(S)_PROXY the server gives it go through the gateway;
	// a process that ignores them reaches the host's network directly), or
	// "" without an egress hub.
	EgressEnforcement string `json:"egress_enforcement,omitempty"`
	// ExecdAccessToken: each sandbox's execd requires its own access token
	// (X-EXECD-ACCESS-TOKEN, in its endpoint responses' headers;
	// Config.ExecdAccessToken). Absent: none, as 1.1.1.
	ExecdAccessToken bool `json:"execd_access_token,omitempty"`
	// AuditSeq is the newest audit event's Seq: a cursor for
	// GET /_mock/audit?since= (what happened from now on).
	AuditSeq int64 `json:"audit_seq"`
}

// InfoIsolation says whether namespaces are enforced.
type InfoIsolation struct {
	Enforced bool   `json:"enforced"`
	Reason   string `json:"reason,omitempty"`
}

// Info reports what this server really enforces.
func (s *Server) Info() Info {
	enforced, reason := s.cfg.Runtime.Isolation()
	limits := s.cfg.Runtime.Enforced()
	if limits == nil {
		limits = map[string]bool{}
	}
	return Info{Version: Version, Isolation: InfoIsolation{Enforced: enforced, Reason: reason},
		Limits: limits, Snapshots: s.snapshotSupport(), Egress: s.cfg.Egress != nil,
		EgressEnforcement: s.egressEnforcement(), ExecdAccessToken: s.cfg.ExecdAccessToken, AuditSeq: s.audit.LastSeq()}
}

func (s *Server) adminInfo(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Info())
}

func (s *Server) adminAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	query := audit.Query{SandboxID: q.Get("sandbox_id"), Kind: wire.Kind(q.Get("kind")), Key: q.Get("key_fingerprint")}
	if v := q.Get("since"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", "since must be a non-negative integer sequence number")
			return
		}
		query.Since = n
	}
	events, last := s.audit.EventsAndLastSeq(query)
	writeJSON(w, http.StatusOK, map[string]any{"events": events, "last_seq": last})
}

func (s *Server) adminEgressDeny(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Egress == nil {
		writeError(w, http.StatusConflict, "MOCK::EGRESS_NOT_CONFIGURED", "This server has no egress hub; the deny override cannot apply.")
		return
	}
	if r.Method == http.MethodDelete {
		if fp := r.URL.Query().Get("key_fingerprint"); fp != "" {
			s.mu.Lock()
			delete(s.egressDenyByKey, fp)
			s.mu.Unlock()
			s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "egress-deny-override", Active: false, Detail: "key " + fp}})
			w.WriteHeader(http.StatusNoContent)
			return
		}
		s.cfg.Egress.ClearDenyOverride()
		s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "egress-deny-override", Active: false}})
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var body struct {
		Targets        []string `json:"targets"`
		KeyFingerprint string   `json:"key_fingerprint"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil || len(body.Targets) == 0 ||
		body.KeyFingerprint != strings.TrimSpace(body.KeyFingerprint) {
		writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", `body must be {"targets":["host", "*.domain", ...]} with at least one target, and optionally "key_fingerprint"`)
		return
	}
	for _, t := range body.Targets {
		if strings.TrimSpace(t) == "" {
			writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", "targets must be non-empty host names or *.wildcards")
			return
		}
	}
	if body.KeyFingerprint != "" {
		// Keyed: every sandbox created with that key from now on denies the
		// targets; other keys' sandboxes are not touched.
		if err := s.cfg.Egress.SetSandboxDenyOverride("", body.Targets); err != nil {
			writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", "invalid deny targets: "+err.Error())
			return
		}
		s.mu.Lock()
		if s.egressDenyByKey == nil {
			s.egressDenyByKey = map[string][]string{}
		}
		s.egressDenyByKey[body.KeyFingerprint] = append([]string(nil), body.Targets...)
		s.mu.Unlock()
		s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "egress-deny-override", Active: true,
			Detail: strings.Join(body.Targets, ",") + " for the sandboxes created with key " + body.KeyFingerprint}})
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err := s.cfg.Egress.SetDenyOverride(body.Targets); err != nil {
		writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", "invalid deny targets: "+err.Error())
		return
	}
	s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "egress-deny-override", Active: true,
		Detail: strings.Join(body.Targets, ",")}})
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) adminCanaries(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Canaries map[string]string `json:"canaries"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil || body.Canaries == nil {
		writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", `body must be {"canaries":{"label":"value",...}}`)
		return
	}
	for label, v := range body.Canaries {
		if label == "" || len(v) < 6 {
			writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", "every canary needs a label and a value of at least 6 characters")
			return
		}
	}
	if label, err := s.armCanaries(body.Canaries, r.Method == http.MethodPut); err != nil {
		writeError(w, http.StatusConflict, "MOCK::CANARIES_ADD_ONLY", err.Error())
		s.audit.Record(wire.Event{Kind: wire.KindFault, Fault: &wire.Fault{Name: "canaries-add-only", Active: true,
			Detail: "refused " + r.Method + " /_mock/canaries: it would have removed or replaced the canary labelled " + strconv.Quote(label)}})
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
