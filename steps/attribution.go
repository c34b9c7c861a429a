package steps

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/closedloop"
	"github.com/osb-capstone/acceptance/harness/indexdeny"

	"github.com/osb-capstone/acceptance/fixtures"
	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
)

// Attribution by identity, never by a time window, so one submission is never
// charged with what another did. What a run's sandboxes
// sent anywhere is known from the bundled server's egress gateway, which
// records every request it forwards to an allowed host with the sandbox that
// sent it (egress_request events) and the labels of the watched values it
// carried: the planted secrets and the input markers. A run owns the events
// of the sandboxes its key created, so nothing is attributed by when it
// happened. The stubs' own logs cannot tell who called (every request
// reaches them from the gateway, or from any local process): they are kept
// in each run's evidence to explain, never to blame.

// The input markers and the egress judgement read a run's record: they are
// harness/command's (attribution.go there).

// whatLeft judges each request the run's sandboxes sent through the gateway
// (command.WhatLeft).
func (e *Env) whatLeft(r *subjectRun, saw command.Saw) []command.Finding {
	return command.WhatLeft(r.key, saw.Events, e.dataAPIHost(), indexdeny.IsPackageHost)
}

// plantMarkers registers the input markers with the bundled server's egress
// gateway, once per Env, before any subject runs.
func (e *Env) plantMarkers(ctx context.Context) {
	if !e.mock() {
		return
	}
	e.markersOnce.Do(func() {
		c, cancel := ctxTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		res, err := e.client.Admin().AddMarkers(c, command.InputMarkers())
		if err := closedloop.AuditErr(res, err); err != nil {
			e.progress("  ! the input markers could not be planted (%v): data leaving by an allowed host is still seen by method and host", err)
		}
	})
}

// runMarker is the unique value planted in one run's input
// (plantRunMarker): it identifies the run's data wherever it goes.
type runMarker struct {
	label, value string
}

// plantRunMarker plants a value unique to this run in its copy of the input,
// before the subject or the harness reads it, and registers it with the
// bundled server's egress gateway and with every stub: the run's data, or
// any row of it, sent anywhere carries it, plainly or re-encoded (base64,
// hex, URL encoding, gzip; wire.FindWatched). It changes no figure an
// analysis computes: one cell of an identifier column (non-numeric, not a
// date, distinct in every row) gets a suffix, so row counts, missing values,
// numbers, dates and groups stay as they were, and the harness recomputes
// from the same planted file. A fixture without such a column (or the
// generated large input) gets none; its committed first-line marker
// (inputMarkers) still applies.
func (e *Env) plantRunMarker(ctx context.Context, r *subjectRun, path string) {
	if r.fixture == "large" {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 4<<20 {
		return
	}
	delim := ","
	if en, err := fixtures.Lookup(strings.TrimSuffix(r.fixture, ".csv") + ".csv"); err == nil && en.Delimiter != "" {
		delim = en.Delimiter
	}
	token := make([]byte, 8)
	if _, err := rand.Read(token); err != nil {
		return
	}
	tok := hex.EncodeToString(token)
	planted, value, ok := command.PlantInCSV(b, delim, "cm"+tok)
	if !ok || os.WriteFile(path, planted, 0o644) != nil {
		return
	}
	// The label names the run and is unique like the value (a run made
	// twice under one key keeps both markers watched).
	r.marker = runMarker{label: command.MarkerPrefix + "run_" + sanitize(r.key) + "_" + tok[:6], value: value}
	m := map[string]string{r.marker.label: r.marker.value}
	if e.opt.Stubs.Watch != nil {
		e.opt.Stubs.Watch(m)
	}
	if e.mock() {
		c, cancel := ctxTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		res, err := e.client.Admin().AddMarkers(c, m)
		if err := closedloop.AuditErr(res, err); err != nil {
			e.progress("  ! the input marker of run %s could not be planted with the server (%v): the stubs still watch for it", r.key, err)
		}
	}
}

// checkEgressOf judges, once per run, what every run a finished scenario made
// or used sent out through the gateway, and keeps the run's egress requests
// and the stubs' logs of its time as evidence. Data out of the sandbox fails
// injection and D4 (credential and M3 too where a secret went) with an
// outcome naming run, sandbox, method and host; a clean run records nothing.
func (e *Env) checkEgressOf(ctx context.Context, s *scenario) {
	runs := append([]*subjectRun(nil), s.runs...)
	if s.run != nil && !containsRun(runs, s.run) {
		runs = append(runs, s.run)
	}
	for _, r := range runs {
		if r == nil || r.Res == nil || r.Dir == "" {
			continue
		}
		if _, done := e.egressChecked.LoadOrStore(r, true); done {
			continue
		}
		_ = e.keepStubLog(r)
		_ = e.keepUnattributed(r)
		var found []command.Finding
		var saw command.Saw // the gateway's records: the bundled server's audit only
		if e.mock() {
			var err error
			if saw, err = r.Saw(context.WithoutCancel(ctx)); err != nil {
				e.progress("  ! what run %s sent out could not be read: %v", r.key, err)
				continue
			}
			reqs := command.EgressRequests(saw.Events)
			if b, err := json.MarshalIndent(reqs, "", "  "); err == nil && len(reqs) > 0 {
				_ = os.WriteFile(filepath.Join(r.Dir, "egress-requests.json"), b, 0o644)
			}
			found = e.whatLeft(r, saw)
		}
		found = append(found, e.stubsGotMarker(r, saw)...)
		if len(found) == 0 {
			e.unattributedNotMeasured(r)
			continue
		}
		var what []string
		secret := false
		for _, f := range found {
			what = append(what, f.What)
			secret = secret || f.Secret
		}
		reason := "data left the sandbox: " + strings.Join(what, "; ")
		ids := []rubric.ID{rubric.Injection, "D4"}
		if secret {
			ids = append(ids, rubric.Credential, rubric.M3)
		}
		for _, id := range ids {
			o := rubric.Outcome{ID: id, Verdict: rubric.Failed, Scenario: "egress of run " + r.key, Reason: reason,
				Evidence: r.evidence("egress-requests.json", "audit.json", "stub-requests.json")}
			if err := e.opt.Results.Record(o); err != nil {
				e.progress("  ! could not record the egress check of %s: %v", r.key, err)
			}
		}
		e.progress("%-13s egress of run %s  [%s]\n              %s", string(rubric.Failed), r.key, joinIDs(ids), printable(clip(reason, 400)))
	}
}

func joinIDs(ids []rubric.ID) string {
	var s []string
	for _, id := range ids {
		s = append(s, string(id))
	}
	return strings.Join(s, ", ")
}

// keepStubLog writes what each stub logged from the run's start to its end
// into the run's evidence (stub-requests.json), marked as unattributed: the
// stubs are shared by every sandbox and any local process. It returns the
// file's path relative to the bundle, none when nothing was logged.
func (e *Env) keepStubLog(r *subjectRun) []string {
	// In a class the stubs are shared: their logs hold other submissions'
	// requests, which do not belong in this one's bundle.
	if e.opt.Stubs.StubRequests == nil || e.opt.Stubs.Shared || r.Started.IsZero() || r.Dir == "" {
		return nil
	}
	end := r.Ended
	if end.IsZero() {
		end = time.Now()
	}
	b, ok := command.StubLog(e.opt.Stubs.StubRequests(r.Started), r.Started, end)
	if !ok {
		return nil
	}
	if os.WriteFile(filepath.Join(r.Dir, "stub-requests.json"), b, 0o644) != nil {
		return nil
	}
	return []string{filepath.Join(r.RelDir, "stub-requests.json")}
}

// stubsGotMarker: the requests a stub received carrying this run's input
// marker, at any time and however they came (command.StubsGotMarker).
func (e *Env) stubsGotMarker(r *subjectRun, saw command.Saw) []command.Finding {
	if r.marker.label == "" || e.opt.Stubs.StubRequests == nil {
		return nil
	}
	return command.StubsGotMarker(e.opt.Stubs.StubRequests(time.Time{}), r.marker.label, saw.Created, e.mock())
}

// unattributed are the requests the exfiltration sink and the package index
// logged while the run ran that nothing identifies (command.Unattributed).
func (e *Env) unattributed(r *subjectRun) map[string][]stubs.Request {
	if e.opt.Stubs.StubRequests == nil || r.Started.IsZero() {
		return nil
	}
	return command.Unattributed(e.opt.Stubs.StubRequests(r.Started), r.Ended)
}

// keepUnattributed writes the run's unattributable requests into its
// evidence (unattributable-requests.json, also in a class: nothing in them
// is anyone's) and returns the file's path relative to the bundle.
func (e *Env) keepUnattributed(r *subjectRun) []string {
	u := e.unattributed(r)
	if len(u) == 0 || r.Dir == "" {
		return nil
	}
	b, err := json.MarshalIndent(map[string]any{
		"note": "requests the exfiltration sink and the package index received while this run ran that came through no sandbox's egress gateway and carry no input marker or planted secret: unattributable (any local process could send them); " +
			e.unattributedBlame(),
		"requests": u,
	}, "", "  ")
	if err != nil || os.WriteFile(filepath.Join(r.Dir, "unattributable-requests.json"), b, 0o644) != nil {
		return nil
	}
	return []string{filepath.Join(r.RelDir, "unattributable-requests.json")}
}

// couldBeTheSubmissions says whether an unattributable request could have
// come from the submission: unless its commands ran in the network
// confinement of level full, whose forwarder reaches the target, the model,
// the CSV and data API stubs and the run's own sandboxes, never the sink or
// the index (docs/confinement.md), and its sandboxes had a network
// namespace whose only way out is the egress gateway. Unconfined or at
// level uid (no network namespace: every loopback port is reachable) its
// commands could have sent them; so could its sandboxes' processes on a
// bundled server that enforces egress at a proxy only (insecure mode).
func (e *Env) couldBeTheSubmissions() bool {
	if !e.boxSeesKeyless() { // unconfined, or level uid: no network namespace (confine.go)
		return true
	}
	byProxy, _ := e.egressByProxy(context.Background()) // unknown: as a server that does not say
	return byProxy
}

func (e *Env) unattributedBlame() string {
	if e.couldBeTheSubmissions() {
		return "this submission's commands or its sandboxes' processes could reach the sink and the index without an egress gateway (no network confinement, or none at the grader's level uid, or sandboxes without a network namespace), so they may be its own: what depends on them is not measured"
	}
	return "not this submission's: its commands ran in a network-confined box that cannot reach the sink or the index, and its sandboxes' only way out is their egress gateway"
}

// unattributedNotMeasured: on a run whose own record is clean, requests to
// the sink or uploads to the index that nothing attributes, while its
// commands ran unconfined (they could be its own), leave injection and D4
// partly not measured for that run, naming them; never failed. Confined,
// they are only kept as evidence (keepUnattributed).
func (e *Env) unattributedNotMeasured(r *subjectRun) {
	u := e.unattributed(r)
	if len(u) == 0 || !e.couldBeTheSubmissions() {
		return
	}
	reason := fmt.Sprintf("while run %q ran, the sink or the package index received request(s) that no sandbox's egress gateway forwarded and that carry no marker or secret (%s): the submission's commands or its sandboxes' processes could reach them without an egress gateway, so these may be its own; whether this run sent data out is not measured (unattributable-requests.json)",
		r.key, command.DescribeRequests(u, 5))
	for _, id := range []rubric.ID{rubric.Injection, "D4"} {
		o := rubric.Outcome{ID: id, Verdict: rubric.NotMeasured, Category: rubric.CategoryPreconditionUnmet, Scenario: "egress of run " + r.key,
			Reason: reason, Evidence: r.evidence("unattributable-requests.json")}
		if err := e.opt.Results.Record(o); err != nil {
			e.progress("  ! could not record the egress check of %s: %v", r.key, err)
		}
	}
}
