package mockserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

func (s *Server) handlePools(w http.ResponseWriter, r *http.Request) {
	writeError(w, http.StatusNotImplemented, "KUBERNETES::POOL_NOT_SUPPORTED",
		"Pools are only supported by the Kubernetes runtime.")
}

// Stable diagnostics as server 1.1.1 answers them on Docker (api/devops.py,
// services/docker/docker_diagnostics.py): logs accept the scopes container and
// all, events runtime and all; the content is inline text, logs keep their
// last 100 lines, events their first 50.
var (
	diagLogScopes   = []string{"container", "all"}
	diagEventScopes = []string{"runtime", "all"}
)

const (
	diagLogLines   = 100
	diagEventLines = 50
)

// handleDiagnostics: with scope → the stable JSON descriptor (inline text);
// without scope → the deprecated text/plain routes, logs and events with
// Deprecation: true (CONTRACT §4; 1.1.1 on Docker).
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
	var errs []validationItem
	tail, bad := queryInt(q, "tail", 100, 1, 10000)
	if bad != nil && kind != "events" && kind != "inspect" {
		errs = append(errs, *bad)
	}
	limit, bad := queryInt(q, "limit", 50, 1, 500)
	if bad != nil && kind == "events" {
		errs = append(errs, *bad)
	}
	if kind == "summary" {
		if _, bad := queryInt(q, "event_limit", 20, 1, 500); bad != nil {
			errs = append(errs, *bad)
		}
	}
	if len(errs) > 0 {
		writeValidation(w, errs...)
		return
	}
	scopes, hasScope := q["scope"]
	stable := hasScope && (kind == "logs" || kind == "events")
	var scope string
	if stable {
		// FastAPI takes the last value of a repeated scalar query parameter.
		scope = strings.ToLower(strings.TrimSpace(scopes[len(scopes)-1]))
		supported := diagLogScopes
		if kind == "events" {
			supported = diagEventScopes
		}
		if !slices.Contains(supported, scope) {
			writeError(w, http.StatusBadRequest, "DIAGNOSTICS_SCOPE_UNSUPPORTED",
				fmt.Sprintf("Unsupported %s diagnostics scope %s. Supported scopes: %s.", kind, pyRepr(scopes[len(scopes)-1]), strings.Join(supported, ", ")))
			return
		}
	}
	sb := s.lookupFor(r, id)
	if sb == nil {
		notFound(w, id)
		return
	}
	if stable {
		var content, warning string
		var truncated bool
		if kind == "logs" {
			content, truncated = diagLines(s.diagLogs(sb, diagLogLines+1, time.Time{}), diagLogLines, true)
			if scope == "all" {
				warning = "The current backend only contributes sandbox container logs to the all scope."
			}
		} else {
			content, truncated = diagLines(s.diagEvents(sb), diagEventLines, false)
			if scope == "all" {
				warning = "The current backend only contributes runtime events to the all scope."
			}
		}
		body := map[string]any{
			"sandboxId": id, "kind": kind, "scope": scope, "delivery": "inline",
			"contentType": "text/plain; charset=utf-8", "content": content,
			"contentLength": len(content), "truncated": truncated,
		}
		if warning != "" {
			body["warnings"] = []string{warning}
		}
		writeJSON(w, http.StatusOK, body)
		return
	}
	var b strings.Builder
	switch kind {
	case "logs":
		var since time.Time
		if v, ok := q["since"]; ok {
			since = s.clock.Now().Add(-sinceDuration(v[len(v)-1]))
		}
		b.WriteString(s.diagLogs(sb, tail, since))
	case "events":
		b.WriteString(s.diagEvents(sb))
	case "summary":
		v := s.view(sb)
		fmt.Fprintf(&b, "sandbox %s\nstate %s (%s)\ncreated %s\n", id, v.Status.State, v.Status.Reason, v.CreatedAt)
		evs := s.audit.Events(audit.Query{SandboxID: id, Kind: wire.KindState})
		if len(evs) > limit {
			evs = evs[len(evs)-limit:]
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
	if kind == "logs" || kind == "events" {
		// 1.1.1 marks only the deprecated logs and events answers.
		w.Header().Set("Deprecation", "true")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(b.String()))
}

// diagLogs is the sandbox's container log as 1.1.1 on Docker reads it
// (container.logs(tail=…, timestamps=True, since=…)): the lines its agent and
// entrypoint wrote, each prefixed with its RFC 3339 nanosecond time, the last
// tail of those written at or after since (zero: all); "(no logs)" when none.
// A command's output is not in it: execd streams that to the caller, as on
// Docker.
func (s *Server) diagLogs(sb *sandbox, tail int, since time.Time) string {
	cl, ok := sb.rt.(runtime.ContainerLogger)
	if !ok {
		return "(no logs)"
	}
	raw, err := cl.ContainerLog()
	if err != nil || len(raw) == 0 {
		return "(no logs)"
	}
	lines := strings.SplitAfter(string(raw), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if !since.IsZero() {
		kept := lines[:0:0]
		for _, l := range lines {
			stamp, _, _ := strings.Cut(l, " ")
			if t, err := time.Parse(time.RFC3339Nano, stamp); err != nil || !t.Before(since.Truncate(time.Second)) {
				kept = append(kept, l)
			}
		}
		lines = kept
	}
	if len(lines) > tail {
		lines = lines[len(lines)-tail:]
	}
	if len(lines) == 0 {
		return "(no logs)"
	}
	return strings.Join(lines, "")
}

// sinceDuration reads the deprecated logs route's since ("10m", "1h"; s, m,
// h or d) as 1.1.1 does (_parse_since_to_timestamp): anything else is ten
// minutes.
func sinceDuration(v string) time.Duration {
	v = strings.ToLower(strings.TrimSpace(v))
	unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}
	if len(v) >= 2 {
		num := strings.TrimRight(v[:len(v)-1], " \t")
		if u, ok := unit[v[len(v)-1]]; ok && num != "" && strings.Trim(num, "0123456789") == "" {
			n, err := strconv.Atoi(num)
			if err != nil || n > 1<<16 { // beyond any log's age: every line
				n = 1 << 16
			}
			return time.Duration(n) * u
		}
	}
	return 10 * time.Minute
}

// diagEvents is the event text Docker's runtime renders from a container's
// state (docker_diagnostics.py get_sandbox_events): its container line, status
// and times. The container ID is derived from the sandbox ID (there is no
// container here).
func (s *Server) diagEvents(sb *sandbox) string {
	v := s.view(sb)
	sum := sha256.Sum256([]byte("sandbox-" + sb.id))
	status := "running"
	switch v.Status.State {
	case "Paused":
		status = "paused"
	case "Terminated", "Failed":
		status = "exited"
	}
	created := sb.createdAt.UTC().Format(time.RFC3339Nano)
	lines := []string{
		fmt.Sprintf("Container:  %s (sandbox-%s)", hex.EncodeToString(sum[:])[:12], sb.id),
		"Status:     " + status,
		"Created:    " + created,
		"Started:    " + created,
	}
	if status == "exited" {
		lines = append(lines, "Finished:   "+v.Status.LastTransitionAt)
		if v.Status.State == "Failed" {
			lines = append(lines, "Event:      Exited with code 1")
		}
	}
	return strings.Join(lines, "\n")
}

// diagLines bounds text to limit lines, keeping the last (keepTail) or the
// first ones (diagnostics.py limit_diagnostic_lines).
func diagLines(text string, limit int, keepTail bool) (string, bool) {
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) <= limit {
		return text, false
	}
	if keepTail {
		lines = lines[len(lines)-limit:]
	} else {
		lines = lines[:limit]
	}
	return strings.Join(lines, ""), true
}

// pyRepr quotes s as Python's repr of a str does (for error messages).
func pyRepr(s string) string {
	q := "'"
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		q = `"`
	}
	s = strings.ReplaceAll(s, `\`, `\\`)
	if q == "'" {
		s = strings.ReplaceAll(s, "'", `\'`)
	}
	return q + s + q
}

func pidList(p []int) string {
	parts := make([]string, len(p))
	for i, v := range p {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}
