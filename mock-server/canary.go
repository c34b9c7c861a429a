package mockserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

const (
	canaryMaxFile  = 16 << 20  // bytes read per file
	canaryMaxTotal = 256 << 20 // bytes read per scan
)

// SetCanaries replaces the planted canary values (label → value).
func (s *Server) SetCanaries(c map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.canaries = make(map[string]string, len(c))
	for k, v := range c {
		s.canaries[k] = v
	}
}

// AddCanaries adds planted canary values (label → value) to those already
// planted, replacing a label's value; graders running several submissions
// at once each add their own.
func (s *Server) AddCanaries(c map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.canaries == nil {
		s.canaries = make(map[string]string, len(c))
	}
	for k, v := range c {
		s.canaries[k] = v
	}
}

// errCanariesAddOnly is why an admin request that would drop or change a
// planted canary is refused.
var errCanariesAddOnly = errors.New("the planted canaries are add-only: a request may add canaries, " +
	"never remove one or change its value (a submission that reached the admin API must not unplant the secrets it is checked for)")

// armCanaries is the admin API's only way to plant canaries, and it is
// add-only: once a canary is planted over HTTP it stays, with its value, for
// the server's life. A PUT (replace) is accepted only when it keeps every
// planted label with its value (it then adds the rest); a POST may re-send a
// planted label with the same value but not change it. A refused request
// changes nothing and returns the first label it would have dropped or
// changed. The in-process SetCanaries (the embedding program's own call, never
// reachable from a request) still replaces.
func (s *Server) armCanaries(c map[string]string, replace bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	labels := make([]string, 0, len(s.canaries))
	for k := range s.canaries {
		labels = append(labels, k)
	}
	sort.Strings(labels)
	for _, k := range labels {
		v, ok := c[k]
		if (replace && !ok) || (ok && v != s.canaries[k]) {
			return k, errCanariesAddOnly
		}
	}
	if s.canaries == nil {
		s.canaries = make(map[string]string, len(c))
	}
	for k, v := range c {
		s.canaries[k] = v
	}
	return "", nil
}

// CanaryScan looks for every canary value in the sandbox: the environment and
// command lines of its processes, files in every place it can write (bounded:
// /workspace, /tmp, /root, /var, /dev/shm and writable volumes),
// recorded command output and recorded command lines. Findings name the
// canary's label, never its value; each is also recorded as a KindCanary event.
func (s *Server) CanaryScan(id string) ([]wire.Canary, error) {
	sb := s.lookup(id)
	if sb == nil {
		return nil, ErrNotFound
	}
	return s.scanCanaries(id, sb), nil
}

// scanCanaries is CanaryScan for a sandbox the caller holds (also one that is
// being removed and is no longer in the table).
func (s *Server) scanCanaries(id string, sb *sandbox) []wire.Canary {
	m := s.canaryMatcher()
	if m == nil {
		return []wire.Canary{}
	}
	m.scanProcs(sb)
	budget := int64(canaryMaxTotal)
	for _, d := range runtime.Writable(sb.rt) {
		_, _ = d.Walk(canaryMaxEntries, time.Now().Add(canaryScanTime),
			func(e runtime.WalkEntry) {
				if e.File == nil || budget <= 0 {
					return
				}
				data, _ := readBounded(e.File, min(canaryMaxFile, budget), time.Now().Add(canaryScanTime))
				budget -= int64(len(data))
				m.check(data, "file", sandboxPath(d, e))
			})
	}
	m.scanRecorded(s, id, sb)
	return m.record(s, id)
}

// sandboxPath is where the sandbox sees a walked entry. Every place the
// sandbox can write is walked (runtime.Writable): /workspace, /tmp, /root,
// its private /var, /dev/shm and each writable volume.
func sandboxPath(d runtime.WritableDir, e runtime.WalkEntry) string {
	if e.Rel == "" {
		return d.Path
	}
	return strings.TrimSuffix(d.Path, "/") + "/" + e.Rel
}

const (
	canaryMaxEntries = 10000           // files looked at per scan
	canaryScanTime   = 2 * time.Second // per walk of a live sandbox
)

// matcher looks for every planted canary value (and its base64, base64url and
// hex encodings) and collects findings by label, never by value.
type matcher struct {
	labels   []string
	canaries map[string][]byte
	variants []variant
	seen     map[wire.Canary]bool
	findings []wire.Canary
}

type variant struct {
	label, enc string
	value      []byte
}

// canaryMatcher is nil when no canary is planted.
func (s *Server) canaryMatcher() *matcher {
	s.mu.Lock()
	m := &matcher{canaries: make(map[string][]byte, len(s.canaries)), seen: map[wire.Canary]bool{}, findings: []wire.Canary{}}
	for k, v := range s.canaries {
		m.canaries[k] = []byte(v)
	}
	s.mu.Unlock()
	if len(m.canaries) == 0 {
		return nil
	}
	for l := range m.canaries {
		m.labels = append(m.labels, l)
	}
	sort.Strings(m.labels)
	for _, l := range m.labels {
		v := m.canaries[l]
		m.variants = append(m.variants, variant{l, "", v},
			variant{l, " (base64)", []byte(base64.StdEncoding.EncodeToString(v))},
			variant{l, " (base64url)", []byte(base64.RawURLEncoding.EncodeToString(v))},
			variant{l, " (hex)", []byte(hex.EncodeToString(v))})
	}
	return m
}

// scrub keeps canary values out of the Where text (paths, command ids).
func (m *matcher) scrub(where string) string {
	for _, l := range m.labels {
		where = strings.ReplaceAll(where, string(m.canaries[l]), "[canary:"+l+"]")
	}
	return where
}

func (m *matcher) check(data []byte, location, where string) {
	for _, v := range m.variants {
		if bytes.Contains(data, v.value) {
			f := wire.Canary{Label: v.label, Location: location, Where: m.scrub(where) + v.enc}
			if !m.seen[f] {
				m.seen[f] = true
				m.findings = append(m.findings, f)
			}
		}
	}
}

// scanProcs reads the environment and command line of every sandbox process.
func (m *matcher) scanProcs(sb *sandbox) {
	for _, pid := range sb.rt.Pids() {
		if env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ")); err == nil {
			for _, kv := range bytes.Split(env, []byte{0}) {
				name, _, _ := bytes.Cut(kv, []byte("="))
				m.check(kv, "env", fmt.Sprintf("pid %d: %s", pid, name))
			}
		}
		if cl, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); err == nil {
			m.check(cl, "command", fmt.Sprintf("pid %d cmdline", pid))
		}
	}
}

// scanRecorded looks at recorded command output and command lines.
func (m *matcher) scanRecorded(s *Server, id string, sb *sandbox) {
	for _, e := range sb.output.Entries() {
		m.check([]byte(e.Text), "output", e.CommandID+" "+e.Stream)
	}
	for _, ev := range s.audit.Events(audit.Query{SandboxID: id, Kind: wire.KindCommand}) {
		m.check([]byte(ev.Command.Command), "command", ev.Command.ID)
	}
}

// record writes each finding as a KindCanary event and returns them.
func (m *matcher) record(s *Server, id string) []wire.Canary {
	for i := range m.findings {
		f := m.findings[i]
		s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindCanary, Canary: &f})
	}
	return m.findings
}

// maxManifestEntries bounds the final workspace manifest recorded at removal.
const maxManifestEntries = 500

// Bounds of the final record, so a DELETE always completes in bounded time
// whatever the sandbox left behind.
const (
	finalBackgroundWait = 1 * time.Second         // asking execd about background commands
	finalQuiesceTimeout = 1 * time.Second         // killing every sandbox process
	finalScanBudget     = 1500 * time.Millisecond // walking and hashing every writable place
)

// finalRecord is taken just before a sandbox is destroyed: the outcome of its
// background commands (asked from execd), then a canary scan of its
// processes' environments (when canaries are planted); then every process of
// the sandbox is killed, so nothing can change its files any more, and its
// writable places (/workspace, /tmp, /root, /var, /dev/shm, writable
// volumes) are walked without following any path the sandbox
// controls (runtime.WalkFiles: no symbolic link is followed, only regular
// files are read, bounded in entries, bytes and time): the canary scan of the
// files, recorded as findings plus one Canary event with Location "scan"
// saying the scan happened, and the manifest as File events with Op
// "final-manifest" (path, size, sha256), so a grader can prove what was, or
// was not, left in the sandbox after the subject's last command.
func (s *Server) finalRecord(id string, sb *sandbox) {
	if sb.rt == nil {
		return
	}
	bg := make(chan struct{})
	go func() {
		defer close(bg)
		s.finishBackground(id, sb)
	}()
	select {
	case <-bg:
	case <-time.After(finalBackgroundWait):
		s.log.Warn("final record: execd did not report background commands in time", "id", id)
	}
	m := s.canaryMatcher()
	if m != nil {
		m.scanProcs(sb)
	}
	if q, ok := sb.rt.(runtime.Quiescer); ok {
		if err := q.Quiesce(finalQuiesceTimeout); err != nil {
			s.log.Warn("final record: stopping the sandbox", "id", id, "err", err)
		}
	}
	type result struct {
		events []wire.Event
		cut    string
	}
	writable := runtime.Writable(sb.rt)
	deadline := time.Now().Add(finalScanBudget)
	done := make(chan result, 1)
	var mu sync.Mutex // guards m while the walk runs
	go func() {
		var r result
		entries := 0
		budget := int64(canaryMaxTotal)
		for _, d := range writable {
			res, _ := d.Walk(canaryMaxEntries, deadline, func(e runtime.WalkEntry) {
				inManifest := entries < maxManifestEntries
				entries++
				f := wire.File{Op: "final-manifest", Path: sandboxPath(d, e), Size: e.Size}
				if e.File != nil && (inManifest || (m != nil && budget > 0)) {
					data, complete := readBounded(e.File, canaryMaxFile, deadline)
					if inManifest && complete {
						sum := sha256.Sum256(data)
						f.SHA256 = hex.EncodeToString(sum[:])
					}
					if m != nil && budget > 0 {
						budget -= int64(len(data))
						mu.Lock()
						m.check(data, "file", f.Path)
						mu.Unlock()
					}
				}
				if inManifest {
					r.events = append(r.events, wire.Event{SandboxID: id, Kind: wire.KindFile, File: &f})
				}
			})
			if res.Cut == "time" {
				r.cut = "time"
			}
		}
		if r.cut == "" && entries > maxManifestEntries {
			r.cut = "entries"
		}
		done <- r
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(finalScanBudget + 250*time.Millisecond):
		r.cut = "time"
		s.log.Warn("final record: scan abandoned (time budget)", "id", id)
	}
	for _, ev := range r.events {
		s.audit.Record(ev)
	}
	switch r.cut {
	case "entries":
		s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindFile, File: &wire.File{Op: "final-manifest",
			Path: fmt.Sprintf("(manifest cut at %d entries)", maxManifestEntries)}})
	case "time":
		s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindFile, File: &wire.File{Op: "final-manifest",
			Path: fmt.Sprintf("(manifest cut: scan time budget of %s spent)", finalScanBudget)}})
	}
	if m != nil {
		mu.Lock()
		m.scanRecorded(s, id, sb)
		n := len(m.record(s, id))
		mu.Unlock()
		s.audit.Record(wire.Event{SandboxID: id, Kind: wire.KindCanary, Canary: &wire.Canary{
			Location: "scan", Where: fmt.Sprintf("%d canaries, %d findings, before removal", len(m.labels), n)}})
	}
}

// readBounded reads up to limit bytes of f, giving up at deadline. complete
// is false when the deadline cut the read.
func readBounded(f *os.File, limit int64, deadline time.Time) ([]byte, bool) {
	var buf bytes.Buffer
	chunk := make([]byte, 1<<20)
	r := io.LimitReader(f, limit)
	for {
		if time.Now().After(deadline) {
			return buf.Bytes(), false
		}
		n, err := r.Read(chunk)
		buf.Write(chunk[:n])
		if err != nil {
			return buf.Bytes(), err == io.EOF
		}
	}
}

// AddMarkers adds input markers (label → value): values planted in a run's
// input data, which the sandbox legitimately holds, so the canary scan never
// looks for them; the egress gateway looks for them in every request it
// forwards to an allowed host.
func (s *Server) AddMarkers(m map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.markers == nil {
		s.markers = make(map[string]string, len(m))
	}
	for k, v := range m {
		s.markers[k] = v
	}
}

// Watched is what the egress gateway looks for in each request it forwards:
// every canary and every input marker, by label.
func (s *Server) Watched() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.canaries)+len(s.markers))
	for k, v := range s.canaries {
		out[k] = v
	}
	for k, v := range s.markers {
		out[k] = v
	}
	return out
}

func (s *Server) adminMarkers(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Markers map[string]string `json:"markers"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil || body.Markers == nil {
		writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", `body must be {"markers":{"label":"value",...}}`)
		return
	}
	for label, v := range body.Markers {
		if label == "" || len(v) < 12 {
			writeError(w, http.StatusBadRequest, "MOCK::INVALID_PARAMETER", "every marker needs a label and a value of at least 12 characters")
			return
		}
	}
	s.AddMarkers(body.Markers)
	w.WriteHeader(http.StatusNoContent)
}
