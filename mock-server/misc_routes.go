package mockserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/audit"
)

func (s *Server) handleSnapshots(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "SNAPSHOT::NOT_IMPLEMENTED",
		"Snapshots are not implemented by this server's runtime.")
}

func (s *Server) handlePools(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "KUBERNETES::POOL_NOT_SUPPORTED",
		"Pools are only supported by the Kubernetes runtime.")
}

// handleDiagnostics: with scope → 501 as the real server; without scope →
// the deprecated text/plain routes with Deprecation: true (CONTRACT §4).
func (s *Server) handleDiagnostics(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	kind := r.PathValue("kind")
	q := pyQuery(r.URL.RawQuery)
	switch kind {
	case "logs", "events", "inspect", "summary":
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
		return
	}
	if _, ok := q["scope"]; ok && (kind == "logs" || kind == "events") {
		writeError(w, http.StatusNotImplemented, "DIAGNOSTICS_NOT_IMPLEMENTED",
			"The stable Diagnostics API is not implemented by this OpenSandbox server.")
		return
	}
	var errs []validationItem
	tail, bad := queryInt(q, "tail", 100, 1, 10000)
	if bad != nil {
		errs = append(errs, *bad)
	}
	limit, bad := queryInt(q, "limit", 50, 1, 500)
	if bad != nil {
		errs = append(errs, *bad)
	}
	if len(errs) > 0 {
		writeValidation(w, errs...)
		return
	}
	sb := s.lookupFor(r, id)
	if sb == nil {
		notFound(w, id)
		return
	}
	var b strings.Builder
	switch kind {
	case "logs":
		lines := strings.Split(strings.TrimRight(sb.output.String(), "\n"), "\n")
		if len(lines) > tail {
			lines = lines[len(lines)-tail:]
		}
		b.WriteString(strings.Join(lines, "\n"))
		b.WriteString("\n")
	case "events", "summary":
		evs := s.audit.Events(audit.Query{SandboxID: id, Kind: audit.KindState})
		if len(evs) > limit {
			evs = evs[len(evs)-limit:]
		}
		if kind == "summary" {
			v := s.view(sb)
			fmt.Fprintf(&b, "sandbox %s\nstate %s (%s)\ncreated %s\n", id, v.Status.State, v.Status.Reason, v.CreatedAt)
		}
		for _, ev := range evs {
			fmt.Fprintf(&b, "%s %s -> %s: %s\n", formatTime(ev.Time), ev.State.From, ev.State.To, ev.State.Reason)
		}
	case "inspect":
		v := s.view(sb)
		fmt.Fprintf(&b, "id: %s\nimage: %s\nstate: %s\nentrypoint: %s\nexecd: %s\npids: %s\n",
			id, sb.image, v.Status.State, strings.Join(sb.entrypoint, " "), sb.execd.Addr(), pidList(sb.rt.Pids()))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Deprecation", "true")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(b.String()))
}

func pidList(p []int) string {
	parts := make([]string, len(p))
	for i, v := range p {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}
