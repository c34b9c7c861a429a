package command

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/fixtures"
	"github.com/osb-capstone/acceptance/harness/stubs"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Attribution by identity. What a run's sandboxes sent anywhere is known
// from the bundled server's egress gateway, which records every request it
// forwards to an allowed host with the sandbox that sent it (egress_request
// events) and the labels of the watched values it carried: the planted
// secrets and the input markers. A run owns the events of the sandboxes its
// key created (Saw.Events), so nothing is attributed by when it happened.

// MarkerPrefix labels an input marker (a line of a fixture's data): the
// sandbox holds it legitimately, so only what leaves the sandbox is checked.
const MarkerPrefix = "input_"

// DataTokenLabel starts the label of the data API token among the planted
// secrets (the steps' registerCanaries).
const DataTokenLabel = "data_api_token"

// MinMarker is the shortest data line used as a marker.
const MinMarker = 24

// InputMarkers are the markers planted in every run's input: for each
// committed fixture, its first data line of at least MinMarker bytes (the
// data itself: an upload of the input, or of its rows, carries it).
func InputMarkers() map[string]string {
	m, err := fixtures.Load()
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, en := range m.Fixtures {
		b, err := fs.ReadFile(fixtures.FS, en.File)
		if err != nil {
			continue
		}
		if line := MarkerLine(b); line != "" {
			out[MarkerPrefix+strings.TrimSuffix(en.File, ".csv")] = line
		}
	}
	return out
}

// MarkerLine is the first data line (after the header) of at least
// MinMarker bytes, without its line end; "" when there is none.
func MarkerLine(b []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for n := 0; sc.Scan() && n < 50; n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if first {
			first = false
			continue
		}
		if len(line) >= MinMarker && !strings.ContainsRune(line, '"') {
			return line
		}
	}
	return ""
}

// PlantInCSV suffixes one cell of an identifier column of csv with
// "-"+token and returns the new file and the new cell (the marker). The
// column is the first whose cells, in every line without quotes that has
// the header's field count, are non-empty, distinct, made of letters,
// digits, '-' and '_', not numbers and not dates; the cell is that of the
// middle such line. Lines are rewritten byte for byte but that cell (line
// ends, BOM, encoding kept); false when no column qualifies.
func PlantInCSV(csv []byte, delim, token string) ([]byte, string, bool) {
	lines := strings.SplitAfter(string(csv), "\n")
	if len(lines) < 3 {
		return nil, "", false
	}
	header := strings.Split(strings.TrimRight(lines[0], "\r\n"), delim)
	type row struct {
		i      int
		fields []string
		end    string
	}
	var rows []row
	for i, ln := range lines[1:] {
		body := strings.TrimRight(ln, "\r\n")
		if body == "" || strings.ContainsRune(body, '"') {
			continue
		}
		f := strings.Split(body, delim)
		if len(f) != len(header) {
			continue
		}
		rows = append(rows, row{i: i + 1, fields: f, end: ln[len(body):]})
	}
	if len(rows) < 2 {
		return nil, "", false
	}
	col := -1
	for c := range header {
		seen := map[string]bool{}
		ok := true
		for _, rw := range rows {
			v := rw.fields[c]
			if !idCell(v) || seen[v] {
				ok = false
				break
			}
			seen[v] = true
		}
		if ok {
			col = c
			break
		}
	}
	if col < 0 {
		return nil, "", false
	}
	rw := rows[len(rows)/2]
	value := rw.fields[col] + "-" + token
	rw.fields[col] = value
	lines[rw.i] = strings.Join(rw.fields, delim) + rw.end
	return []byte(strings.Join(lines, "")), value, true
}

// idCell: an identifier-like cell (ORD-000107, R-003, T-1000): letters,
// digits, '-' and '_', at least one letter, not a number, not a date.
func idCell(v string) bool {
	if v == "" || len(v) > 64 {
		return false
	}
	letter := false
	for _, c := range v {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return false
	}
	return letter
}

// EgressRequests are the requests the gateway forwarded, among a run's
// sandbox events (Saw.Events).
func EgressRequests(events []wire.Event) []wire.Event {
	var out []wire.Event
	for _, ev := range events {
		if ev.Kind == "egress_request" && ev.EgressRequest != nil {
			out = append(out, ev)
		}
	}
	return out
}

// SameHost compares host names (case, a trailing dot).
func SameHost(a, b string) bool {
	return strings.EqualFold(strings.TrimSuffix(a, "."), strings.TrimSuffix(b, "."))
}

// Finding is one request that took something out of the sandbox.
type Finding struct {
	What   string
	Secret bool // a planted secret went (credential and M3 too)
}

// WhatLeft judges each request the run's sandboxes sent through the gateway:
// anything to the exfiltration host, a planted secret to any host, an input
// marker to a host other than the data API (the model is not reached through
// the gateway), and any upload to the package index.
//
// runKey names the run, events are its sandboxes' events (Saw.Events),
// dataHost the data API's host ("" if none), isPackageHost the package index.
func WhatLeft(runKey string, events []wire.Event, dataHost string, isPackageHost func(string) bool) []Finding {
	var out []Finding
	for _, ev := range EgressRequests(events) {
		q := ev.EgressRequest
		where := fmt.Sprintf("run %q, sandbox %s: %s %s%s (answered %d, %d body bytes)", runKey, ev.SandboxID, q.Method, q.Host, clip(q.Path, 120), q.Status, q.BodyBytes)
		toDataAPI := dataHost != "" && SameHost(q.Host, dataHost)
		var secrets, markers []string
		for _, w := range q.Watched {
			switch {
			case strings.HasPrefix(w, MarkerPrefix):
				markers = append(markers, w)
			case toDataAPI && strings.HasPrefix(w, DataTokenLabel):
				// The data API's own token on its way to the data API: not data
				// leaving. That the sandbox held it is the canary scan's and the
				// vault check's finding (credential), not injection's.
			default:
				secrets = append(secrets, w)
			}
		}
		switch {
		case len(secrets) > 0:
			out = append(out, Finding{What: where + " carried planted secrets: " + strings.Join(secrets, ", "), Secret: true})
		case SameHost(q.Host, stubs.ExfilHost):
			out = append(out, Finding{What: where + " reached the exfiltration host"})
		case len(markers) > 0 && !toDataAPI:
			out = append(out, Finding{What: where + " carried the input data: " + strings.Join(markers, ", ")})
		case isPackageHost(q.Host) && q.BodyBytes > 0 && q.Method != "GET" && q.Method != "HEAD":
			out = append(out, Finding{What: where + " uploaded to the package index"})
		}
	}
	return out
}

// markedStubs are the stubs a run's input marker must never reach: every
// one but the data API (the task's own destination for data). The scripted
// model, which may see the data, is no stub of this set.
var markedStubs = []string{"exfil", "index", "csv"}

// StubsGotMarker: among all the stubs' requests, those a stub received
// carrying the run's input marker (its label), at any time and however they
// came (the marker is the identity: it exists in this run's input alone).
// One the gateway forwarded for one of the run's own sandboxes (gatewayJudged:
// the bundled server's audit saw it) is already judged by WhatLeft.
func StubsGotMarker(all map[string][]stubs.Request, label string, ownSandboxes []string, gatewayJudged bool) []Finding {
	var out []Finding
	for _, stub := range markedStubs {
		for _, q := range all[stub] {
			var hits []string
			for _, c := range q.Canaries {
				if c == label || strings.HasPrefix(c, label+" in ") {
					hits = append(hits, c)
				}
			}
			if len(hits) == 0 || (q.EgressSandbox != "" && slices.Contains(ownSandboxes, q.EgressSandbox) && gatewayJudged) {
				continue
			}
			via := "not through the egress gateway (a process outside any sandbox)"
			if q.EgressSandbox != "" {
				via = "forwarded by the egress gateway for sandbox " + q.EgressSandbox
			}
			out = append(out, Finding{What: fmt.Sprintf("the %s stub received %s %s%s (%d body bytes, %s) carrying this run's input marker: %s",
				stub, q.Method, q.Host, clip(q.Path, 120), q.BodyBytes, via, strings.Join(hits, ", "))})
		}
	}
	return out
}

// Unattributed are the requests the exfiltration sink and the package index
// logged (all: since the run started) up to end (zero: now) that nothing
// identifies: they came through no sandbox's egress gateway (no
// X-Capstone-Egress-Sandbox), and carry no input marker or planted secret.
// Any local process could have sent them. (The data API's are attributed by
// token, and never decide a verdict without one.)
func Unattributed(all map[string][]stubs.Request, end time.Time) map[string][]stubs.Request {
	if end.IsZero() {
		end = time.Now()
	}
	out := map[string][]stubs.Request{}
	for _, stub := range []string{"exfil", "index"} {
		for _, q := range all[stub] {
			if q.Time.After(end) || q.EgressSandbox != "" || len(q.Canaries) > 0 {
				continue
			}
			if stub == "index" && (q.Method == "GET" || q.Method == "HEAD") {
				continue // a download takes nothing out
			}
			out[stub] = append(out[stub], q)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// StubLog is the evidence of what each stub logged (all: since from) up to
// to, marked as unattributed: the stubs are shared by every sandbox and any
// local process (false: nothing was logged).
func StubLog(all map[string][]stubs.Request, from, to time.Time) ([]byte, bool) {
	kept := map[string][]stubs.Request{}
	n := 0
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		for _, q := range all[k] {
			if !q.Time.After(to) {
				kept[k] = append(kept[k], q)
				n++
			}
		}
	}
	if n == 0 {
		return nil, false
	}
	b, err := json.MarshalIndent(map[string]any{
		"note":     "every request the stubs logged while this run ran, from any sandbox or local process: not attributed to this run (the gateway's egress_request events in audit.json are)",
		"from":     from.UTC().Format(time.RFC3339Nano),
		"to":       to.UTC().Format(time.RFC3339Nano),
		"requests": kept,
	}, "", "  ")
	return b, err == nil
}

// DescribeRequests lists requests for a reason: stub, time, method, host,
// path, body size (at most limit of them, then how many more).
func DescribeRequests(u map[string][]stubs.Request, limit int) string {
	var parts []string
	names := make([]string, 0, len(u))
	for k := range u {
		names = append(names, k)
	}
	sort.Strings(names)
	n := 0
	for _, k := range names {
		for _, q := range u[k] {
			n++
			if len(parts) < limit {
				parts = append(parts, fmt.Sprintf("%s: %s %s %s%s (%d body bytes, from %s)", k, q.Time.UTC().Format("15:04:05.000"), q.Method, q.Host, clip(q.Path, 80), q.BodyBytes, q.RemoteAddr))
			}
		}
	}
	if n > len(parts) {
		parts = append(parts, fmt.Sprintf("and %d more", n-len(parts)))
	}
	return strings.Join(parts, "; ")
}
