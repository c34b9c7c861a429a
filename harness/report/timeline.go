package report

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/regularfile"
)

// SubjectRun is one subject run's timeline, read from
// evidence/subject-<key>/ (run.json, audit.json, out/summary.json).
type SubjectRun struct {
	Key string
	Dir string // bundle-relative
	// Field is set for one of the submission's other commands (an
	// invocation: "contract", "reap", "test.unit", "test.integration"),
	// read from evidence/subject-<field>[-rN]/invocation.json and
	// server-saw.json; empty for a subject run.
	Field   string
	Command string
	RunID   string // CAPSTONE_RUN_ID it ran with (reap: the killed run's)
	// Calls counts the lifecycle calls the server saw from the command's
	// key, and keyless ones while it ran (invocations only).
	Calls        int
	Fixture      string
	Start, End   time.Time
	ExitCode     int
	Signal       string
	TimedOut     bool
	HarnessError string
	Steps        []TimelineStep
	Sandboxes    []SandboxLife
	Markers      []Marker
	// HasAudit and HasSummary say which evidence files the run has;
	// StepsFrom says where the step bars come from: "audit" (what the server
	// ran, with start times) or "summary" (the subject's own account, laid
	// end to end from the start: no audit was saved for this run).
	HasAudit, HasSummary bool
	StepsFrom            string
	// Thumbnail is a small PNG data URI of the run's chart (at most
	// maxThumbBytes), empty if there is none.
	Thumbnail string
	ChartRef  string // bundle-relative path of the full chart
}

// TimelineStep is one command of the run.
type TimelineStep struct {
	Name       string
	Command    string
	Start      time.Time // zero when only the subject's own summary is known
	DurationMs int64
	ExitCode   *int
	Error      string
	Truncated  bool
}

// SandboxLife is one sandbox of the run, from create to delete and 404.
type SandboxLife struct {
	ID        string
	Created   time.Time
	Deleted   time.Time // zero if never deleted (or expired)
	Gone404   time.Time // first 404 for it, zero if none seen
	EndState  string
	EndReason string
}

// Marker is a point event: a fault injected, a denial, a kill.
type Marker struct {
	At    time.Time
	Kind  string // fault | denied | kill | info
	Label string
}

const (
	maxThumbW     = 240
	maxThumbH     = 160
	maxChartBytes = 8 << 20
	maxThumbBytes = 48 << 10
)

type runRecord struct {
	Fixture      string    `json:"fixture"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at"`
	HarnessError string    `json:"harness_error"`
	Faults       []string  `json:"faults"`
	Result       *struct {
		ExitCode int    `json:"exit_code"`
		Signal   string `json:"signal"`
		TimedOut bool   `json:"timed_out"`
		Canceled bool   `json:"canceled"`
	} `json:"result"`
}

type auditEvent struct {
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	SandboxID string    `json:"sandbox_id"`
	Kind      string    `json:"kind"`
	Lifecycle *struct {
		Method string `json:"method"`
		Path   string `json:"path"`
		Status int    `json:"status"`
	} `json:"lifecycle"`
	Command *struct {
		Command    string    `json:"command"`
		StartedAt  time.Time `json:"started_at"`
		ExitCode   *int      `json:"exit_code"`
		DurationMs int64     `json:"duration_ms"`
		Error      string    `json:"error"`
	} `json:"command"`
	State *struct {
		To     string `json:"to"`
		Reason string `json:"reason"`
	} `json:"state"`
	Egress *struct {
		Phase    string `json:"phase"`
		Host     string `json:"host"`
		Decision string `json:"decision"`
		Rule     string `json:"rule"`
	} `json:"egress"`
	Fault *struct {
		Name   string `json:"name"`
		Active bool   `json:"active"`
		Detail string `json:"detail"`
	} `json:"fault"`
}

type summaryDoc struct {
	Steps []struct {
		Name       string `json:"name"`
		Command    string `json:"command"`
		ExitCode   *int   `json:"exit_code"`
		DurationMs int64  `json:"duration_ms"`
		Truncated  bool   `json:"truncated"`
	} `json:"steps"`
}

// ReadRuns reads every subject run's timeline in the bundle, in key order.
// A run whose files are missing or unreadable is shown with what is there.
func ReadRuns(dir string) ([]SubjectRun, error) {
	matches, err := filepath.Glob(filepath.Join(dir, EvidenceDir, "subject-*", "run.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	runs := []SubjectRun{}
	for _, m := range matches {
		runs = append(runs, readRun(dir, filepath.Dir(m)))
	}
	return runs, nil
}

func readRun(bundle, rdir string) SubjectRun {
	rel, _ := filepath.Rel(bundle, rdir)
	r := SubjectRun{Key: strings.TrimPrefix(filepath.Base(rdir), "subject-"), Dir: filepath.ToSlash(rel)}
	var rec runRecord
	if b, err := os.ReadFile(filepath.Join(rdir, "run.json")); err == nil && json.Unmarshal(b, &rec) == nil {
		r.Fixture, r.Start, r.End, r.HarnessError = rec.Fixture, rec.StartedAt, rec.EndedAt, rec.HarnessError
		if rec.Result != nil {
			r.ExitCode, r.Signal, r.TimedOut = rec.Result.ExitCode, rec.Result.Signal, rec.Result.TimedOut
			if rec.Result.Signal != "" {
				r.Markers = append(r.Markers, Marker{At: rec.EndedAt, Kind: "kill", Label: "subject process ended by a signal (" + rec.Result.Signal + ")"})
			}
			if rec.Result.TimedOut {
				r.Markers = append(r.Markers, Marker{At: rec.EndedAt, Kind: "kill", Label: "subject timed out"})
			}
		}
		for _, f := range rec.Faults {
			r.Markers = append(r.Markers, Marker{At: rec.StartedAt, Kind: "fault", Label: f})
		}
	}
	var events []auditEvent
	if b, err := os.ReadFile(filepath.Join(rdir, "audit.json")); err == nil {
		r.HasAudit = json.Unmarshal(b, &events) == nil
	}
	// Every lifecycle call made with the run's key, refused creates included
	// (a 429 creates no sandbox, so it is not in audit.json).
	var calls []auditEvent
	if b, err := os.ReadFile(filepath.Join(rdir, "lifecycle-calls.json")); err == nil {
		_ = json.Unmarshal(b, &calls)
	}
	n429 := 0
	for _, ev := range calls {
		if lc := ev.Lifecycle; lc != nil && lc.Method == "POST" && isCreate(lc.Path) && lc.Status == 429 {
			n429++
			label := fmt.Sprintf("create attempt answered 429 (%d)", n429)
			if ev.Fault != nil && ev.Fault.Detail != "" {
				label += ": " + ev.Fault.Detail // on a real target: who injected it (the recording proxy)
			}
			r.Markers = append(r.Markers, Marker{At: ev.Time, Kind: "fault", Label: label})
		}
	}
	sort.SliceStable(events, func(i, j int) bool { return events[i].Seq < events[j].Seq })
	var sum summaryDoc
	// The subject's own file: bounded, never through a symbolic link.
	if b, err := regularfile.ReadMax(filepath.Join(rdir, "out", "summary.json"), 16<<20); err == nil {
		r.HasSummary = json.Unmarshal(b, &sum) == nil
	}
	names := map[string][]string{}
	for _, s := range sum.Steps {
		names[s.Command] = append(names[s.Command], s.Name)
	}
	applyEvents(&r, events, names, len(calls) == 0)
	if len(r.Steps) > 0 {
		r.StepsFrom = "audit"
	} else if len(sum.Steps) > 0 {
		// No audit of commands (not saved for this run, or a real target):
		// the subject's own account.
		r.StepsFrom = "summary"
		for _, s := range sum.Steps {
			r.Steps = append(r.Steps, TimelineStep{Name: s.Name, Command: s.Command, DurationMs: s.DurationMs, ExitCode: s.ExitCode, Truncated: s.Truncated})
		}
	}
	r.Markers = dedupeMarkers(r.Markers)
	chart := filepath.Join(rdir, "out", "chart.png")
	if thumb := thumbnail(chart); thumb != "" {
		r.Thumbnail = thumb
		r.ChartRef = filepath.ToSlash(filepath.Join(r.Dir, "out", "chart.png"))
	}
	return r
}

// applyEvents folds audit events (in sequence order) into a run's sandbox
// lives, command steps and markers. names maps a command to the step names
// the subject's summary gave it; refused429 says whether a 429 create in
// the events is to be marked (when no separate record of the calls has).
func applyEvents(r *SubjectRun, events []auditEvent, names map[string][]string, refused429 bool) {
	boxes := map[string]*SandboxLife{}
	var order []string
	box := func(id string) *SandboxLife {
		if b, ok := boxes[id]; ok {
			return b
		}
		b := &SandboxLife{ID: id}
		boxes[id] = b
		order = append(order, id)
		return b
	}
	for _, ev := range events {
		switch {
		case ev.Kind == "lifecycle" && ev.Lifecycle != nil:
			lc := ev.Lifecycle
			switch {
			case lc.Method == "POST" && isCreate(lc.Path) && lc.Status == 202 && ev.SandboxID != "":
				if b := box(ev.SandboxID); b.Created.IsZero() {
					b.Created = ev.Time
				}
			case lc.Method == "POST" && isCreate(lc.Path) && lc.Status == 429 && refused429:
				r.Markers = append(r.Markers, Marker{At: ev.Time, Kind: "fault", Label: "create attempt answered 429"})
			case lc.Method == "DELETE" && ev.SandboxID != "" && lc.Status < 300:
				box(ev.SandboxID).Deleted = ev.Time
			case lc.Method == "GET" && lc.Status == 404 && ev.SandboxID != "":
				if b := box(ev.SandboxID); b.Gone404.IsZero() {
					b.Gone404 = ev.Time
				}
			}
		case ev.Kind == "state" && ev.State != nil && ev.SandboxID != "":
			b := box(ev.SandboxID)
			if ev.State.To == "Running" && b.Created.IsZero() {
				b.Created = ev.Time
			}
			if ev.State.To != "Running" && ev.State.To != "Pending" {
				b.EndState, b.EndReason = ev.State.To, ev.State.Reason
				if ev.State.To == "Expired" {
					r.Markers = append(r.Markers, Marker{At: ev.Time, Kind: "fault", Label: "sandbox " + ev.State.To + ": " + ev.State.Reason})
				}
			}
		case ev.Kind == "command" && ev.Command != nil:
			c := ev.Command
			st := TimelineStep{Command: c.Command, Start: c.StartedAt, DurationMs: c.DurationMs, ExitCode: c.ExitCode, Error: c.Error}
			if ns := names[c.Command]; len(ns) > 0 {
				st.Name, names[c.Command] = ns[0], ns[1:]
			} else {
				st.Name = shortCommand(c.Command)
			}
			r.Steps = append(r.Steps, st)
		case ev.Kind == "egress" && ev.Egress != nil && ev.Egress.Decision == "deny":
			kind, label := "denied", "egress denied: "+ev.Egress.Host
			if strings.HasPrefix(ev.Egress.Rule, "override") {
				kind, label = "fault", "egress denied by a simulated fault: "+ev.Egress.Host
			}
			r.Markers = append(r.Markers, Marker{At: ev.Time, Kind: kind, Label: label})
		case ev.Kind == "fault" && ev.Fault != nil:
			state := "off"
			if ev.Fault.Active {
				state = "on"
			}
			r.Markers = append(r.Markers, Marker{At: ev.Time, Kind: "fault", Label: "fault " + ev.Fault.Name + " " + state})
		}
	}
	for _, id := range order {
		r.Sandboxes = append(r.Sandboxes, *boxes[id])
	}
}

func isCreate(p string) bool {
	p = strings.TrimSuffix(strings.SplitN(p, "?", 2)[0], "/")
	return p == "/v1/sandboxes" || p == "/sandboxes"
}

// shortCommand names a command the subject's summary does not name.
func shortCommand(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return "command"
	}
	if r := []rune(s); len(r) > 28 {
		return string(r[:27]) + "…"
	}
	return s
}

// dedupeMarkers keeps one marker per label and kind (e.g. the A and AAAA
// lookups of one denied host), the first one.
func dedupeMarkers(ms []Marker) []Marker {
	seen := map[string]bool{}
	var out []Marker
	for _, m := range ms {
		k := m.Kind + "\x00" + m.Label
		if !seen[k] {
			seen[k] = true
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// thumbnail scales a PNG chart down (box filter, at most
// maxThumbW×maxThumbH) and returns it as a data URI; "" when there is no
// chart, it is not a sane PNG, or the thumbnail would be too large.
func thumbnail(path string) string {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxChartBytes {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width*cfg.Height > 40_000_000 {
		return ""
	}
	if _, err := f.Seek(0, 0); err != nil {
		return ""
	}
	src, err := png.Decode(f)
	if err != nil {
		return ""
	}
	b := src.Bounds()
	scale := min(float64(maxThumbW)/float64(b.Dx()), float64(maxThumbH)/float64(b.Dy()), 1)
	w, h := max(1, int(float64(b.Dx())*scale)), max(1, int(float64(b.Dy())*scale))
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	// Box filter: each thumbnail pixel averages the source pixels it covers.
	for y := 0; y < h; y++ {
		y0, y1 := b.Min.Y+y*b.Dy()/h, b.Min.Y+(y+1)*b.Dy()/h
		for x := 0; x < w; x++ {
			x0, x1 := b.Min.X+x*b.Dx()/w, b.Min.X+(x+1)*b.Dx()/w
			var r, g, bl, a, n uint64
			for sy := y0; sy < max(y1, y0+1); sy++ {
				for sx := x0; sx < max(x1, x0+1); sx++ {
					cr, cg, cb, ca := src.At(sx, sy).RGBA()
					r, g, bl, a, n = r+uint64(cr), g+uint64(cg), bl+uint64(cb), a+uint64(ca), n+1
				}
			}
			dst.SetRGBA64(x, y, color.RGBA64{R: uint16(r / n), G: uint16(g / n), B: uint16(bl / n), A: uint16(a / n)})
		}
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, dst); err != nil || buf.Len() > maxThumbBytes {
		return ""
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// invocationRecord is evidence/subject-<field>/invocation.json.
type invocationRecord struct {
	Field        string    `json:"field"`
	Command      string    `json:"command"`
	RunID        string    `json:"run_id"`
	StartedAt    time.Time `json:"started_at"`
	EndedAt      time.Time `json:"ended_at"`
	HarnessError string    `json:"harness_error"`
	Result       *struct {
		ExitCode int    `json:"exit_code"`
		Signal   string `json:"signal"`
		TimedOut bool   `json:"timed_out"`
	} `json:"result"`
}

// serverSaw is evidence/subject-<field>/server-saw.json: what the server saw
// of one invocation.
type serverSaw struct {
	Calls   []auditEvent `json:"calls_with_its_key"`
	Keyless []auditEvent `json:"keyless_calls_while_it_ran"`
	Events  []auditEvent `json:"sandbox_events"`
}

// maxCallMarkers bounds the call markers of one invocation's timeline (a
// test suite may make hundreds of calls; server-saw.json has them all).
const maxCallMarkers = 16

// ReadInvocations reads the timelines of the submission's other commands
// (contract, reap, test.unit, test.integration; one per repetition) from
// evidence/subject-*/invocation.json and server-saw.json, in start order. A
// command whose files are partly missing is shown with what is there.
func ReadInvocations(dir string) ([]SubjectRun, error) {
	matches, err := filepath.Glob(filepath.Join(dir, EvidenceDir, "subject-*", "invocation.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(matches)
	out := []SubjectRun{}
	for _, m := range matches {
		if r, ok := readInvocation(dir, filepath.Dir(m)); ok {
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out, nil
}

func readInvocation(bundle, idir string) (SubjectRun, bool) {
	rel, _ := filepath.Rel(bundle, idir)
	r := SubjectRun{Key: strings.TrimPrefix(filepath.Base(idir), "subject-"), Dir: filepath.ToSlash(rel)}
	var rec invocationRecord
	b, err := os.ReadFile(filepath.Join(idir, "invocation.json"))
	if err != nil || json.Unmarshal(b, &rec) != nil {
		return r, false
	}
	r.Field, r.Command, r.RunID = rec.Field, rec.Command, rec.RunID
	if r.Field == "" {
		r.Field = r.Key
	}
	r.Start, r.End, r.HarnessError = rec.StartedAt, rec.EndedAt, rec.HarnessError
	if rec.Result != nil {
		r.ExitCode, r.Signal, r.TimedOut = rec.Result.ExitCode, rec.Result.Signal, rec.Result.TimedOut
		if rec.Result.TimedOut {
			r.Markers = append(r.Markers, Marker{At: rec.EndedAt, Kind: "kill", Label: "the " + r.Field + " command timed out"})
		}
	}
	var saw serverSaw
	if b, err := os.ReadFile(filepath.Join(idir, "server-saw.json")); err == nil && json.Unmarshal(b, &saw) == nil {
		r.HasAudit = true
	}
	// One event list: the sandboxes' events and the calls (the calls on its
	// own sandboxes are in both).
	seen := map[string]bool{}
	var events []auditEvent
	for _, list := range [][]auditEvent{saw.Events, saw.Calls, saw.Keyless} {
		for _, ev := range list {
			k := fmt.Sprint(ev.Seq)
			if ev.Seq == 0 { // a real target's recorded call has no audit sequence
				k = ev.Time.String() + "\x00" + ev.SandboxID
				if lc := ev.Lifecycle; lc != nil {
					k += "\x00" + lc.Method + lc.Path + fmt.Sprint(lc.Status)
				}
			}
			if !seen[k] {
				seen[k] = true
				events = append(events, ev)
			}
		}
	}
	sort.SliceStable(events, func(i, j int) bool {
		if events[i].Seq != events[j].Seq && events[i].Seq > 0 && events[j].Seq > 0 {
			return events[i].Seq < events[j].Seq
		}
		return events[i].Time.Before(events[j].Time)
	})
	applyEvents(&r, events, nil, true)
	if len(r.Steps) > 0 {
		r.StepsFrom = "audit"
	}
	// Every lifecycle call it made (and keyless ones while it ran) as a
	// marker, up to maxCallMarkers.
	keyless := map[string]bool{}
	for _, ev := range saw.Keyless {
		keyless[fmt.Sprint(ev.Seq)+ev.Time.String()] = true
	}
	calls := append(append([]auditEvent{}, saw.Calls...), saw.Keyless...)
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].Time.Before(calls[j].Time) })
	r.Calls = len(calls)
	for i, ev := range calls {
		lc := ev.Lifecycle
		if lc == nil {
			continue
		}
		if i == maxCallMarkers {
			r.Markers = append(r.Markers, Marker{At: ev.Time, Kind: "info", Label: fmt.Sprintf("… and %d more calls (server-saw.json)", len(calls)-maxCallMarkers)})
			break
		}
		label := fmt.Sprintf("%s %s → %d", lc.Method, shortPath(lc.Path), lc.Status)
		if keyless[fmt.Sprint(ev.Seq)+ev.Time.String()] {
			label = "without a key: " + label
		}
		r.Markers = append(r.Markers, Marker{At: ev.Time, Kind: "call", Label: label})
	}
	sort.SliceStable(r.Markers, func(i, j int) bool { return r.Markers[i].At.Before(r.Markers[j].At) })
	return r, true
}

// shortPath shortens the sandbox IDs in an API path to 8 characters.
func shortPath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if len(s) == 36 && strings.Count(s, "-") == 4 {
			segs[i] = s[:8]
		}
	}
	return strings.Join(segs, "/")
}
