package command

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Record is what the grader kept of one command.
type Record struct {
	Field  string // manifest field: run, contract, reap, test.unit, test.integration
	RelDir string // its evidence directory, relative to the bundle
	Dir    string // absolute
	OutDir string // {out}

	APIKey string // the command's own API key (minted per command when the server can)
	KeyFP  string
	RunID  string // CAPSTONE_RUN_ID it was given

	Started, Ended time.Time
	Res            *subject.Result
	Err            error // the harness could not run it

	// Observed: a real target's lifecycle calls, seen by the recording
	// proxy; EndpointCalls its execd and egress calls through the proxy's
	// rewritten endpoints (evidence endpoint-calls.json).
	Observed      []observe.Call
	EndpointCalls []observe.Call
	Proxy         *observe.Proxy // that proxy, while the command runs

	// AuditSince: the bundled server's audit cursor before it started.
	AuditSince int64
	// WantKeyless: the command's keyless requests are part of what it is
	// judged on (the contract command).
	WantKeyless bool
	// Boxed: the command ran in a box whose guard saw its requests to the
	// lifecycle port (Keyless is the whole of its keyless requests).
	Boxed bool
	// unattributed: it was to run in a box but no box ran (its keyless
	// requests cannot be told from anyone else's).
	unattributed bool

	// BudgetSpent: the submission's time was spent before this command,
	// which did not start (its result says timed out).
	BudgetSpent bool
	BudgetOf    time.Duration // the submission's time (SubmissionTimeout)

	// DrillSandbox: the sandbox a drill removed on purpose (never a vanish),
	// from DrillAt on (when the drill's fault hit it).
	DrillSandbox string
	DrillAt      time.Time

	// Witness says what the target saw of the key; Fate what a real target
	// saw of one sandbox (nil when it cannot say).
	Witness Witness
	Fate    func(ctx context.Context, sandboxID string) (SandboxFate, error)
	// Keep, when set, is given what the target saw once it was read (its
	// evidence), whoever read it first.
	Keep func(Saw)

	keylessMu sync.Mutex
	keyless   []KeylessRequest

	sawOnce sync.Once
	saw     Saw
	sawErr  error

	vanishOnce sync.Once
	vanishWhy  string
}

// SandboxFate is what a real target saw of one sandbox (the docker target's
// control plane log and engine; harness/core.SandboxFate).
type SandboxFate struct {
	Deletes       []string // DELETEs of it the control plane answered with success
	LogNames      int      // lines of the control plane's log naming it
	ContainerGone bool     // the engine holds no container of it
	// Stopped: the engine says its container stopped (it is not running,
	// or it is gone and the engine's events say it died), at StoppedAt
	// (zero: the engine cannot say when). EngineSaid is what the engine
	// said about why, in its own terms (State.OOMKilled, the exit code or
	// signal, State.Error, its events, its own restart).
	Stopped    bool
	StoppedAt  time.Time
	EngineSaid string
}

// KeylessRequest is a request without an API key that the command's box
// sent to the target's lifecycle port, as the box's guard saw it.
type KeylessRequest struct {
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
}

// NoteRequest records r if it carries no API key (the box's guard calls it
// for every request the command sends to the lifecycle port).
func (rec *Record) NoteRequest(r *http.Request) {
	if r.Header.Get(osb.HeaderAPIKey) != "" {
		return
	}
	rec.keylessMu.Lock()
	defer rec.keylessMu.Unlock()
	if len(rec.keyless) < maxKeyless {
		rec.keyless = append(rec.keyless, KeylessRequest{Time: time.Now(), Method: r.Method, Path: r.URL.Path})
	}
}

// maxKeyless bounds the keyless requests kept of one command.
const maxKeyless = 1000

// Keyless are the keyless requests its box's guard saw it send.
func (rec *Record) Keyless() []KeylessRequest {
	rec.keylessMu.Lock()
	defer rec.keylessMu.Unlock()
	return append([]KeylessRequest(nil), rec.keyless...)
}

// keylessSlack: how long after the guard saw a request the target's record
// of it may be (the guard notes it before forwarding it, on the same
// machine's clock: the record is never earlier).
const keylessSlack = 5 * time.Second

// keylessOf picks the command's keyless calls out of lifecycle events.
// With a box, each request its guard saw is matched to the first unused
// keyless event with the same method and path at or after it (within
// keylessSlack): one another box sent just before is never taken. Without
// a box, every keyless event of the command's run window is taken (the
// command ran alone: LockExclusive).
func (rec *Record) keylessOf(events []wire.Event) []wire.Event {
	var out []wire.Event
	if !rec.Boxed {
		for _, ev := range events {
			if lc := ev.Lifecycle; ev.Kind == "lifecycle" && lc != nil && lc.KeyFingerprint == "" && !ev.Time.Before(rec.Started) && !ev.Time.After(rec.Ended) {
				out = append(out, ev)
			}
		}
		return out
	}
	used := map[int]bool{}
	for _, kr := range rec.Keyless() {
		for i, ev := range events {
			lc := ev.Lifecycle
			if used[i] || ev.Kind != "lifecycle" || lc == nil || lc.KeyFingerprint != "" || !strings.EqualFold(lc.Method, kr.Method) ||
				normPath(lc.Path) != normPath(kr.Path) || ev.Time.Before(kr.Time) || ev.Time.After(kr.Time.Add(keylessSlack)) {
				continue
			}
			used[i] = true
			out = append(out, ev)
			break
		}
	}
	return out
}

func normPath(p string) string {
	p = strings.TrimSuffix(strings.SplitN(p, "?", 2)[0], "/")
	return strings.TrimPrefix(p, "/v1")
}

// Launched says the command was started (its record is worth writing).
func (rec *Record) Launched() bool { return !rec.Started.IsZero() }

// What names the command in a message.
func (rec *Record) What() string {
	if rec.Field == "run" {
		return "the subject"
	}
	return "the submission's " + rec.Field + " command"
}

// Budget says what the submission's time was.
func (rec *Record) Budget() string { return rec.BudgetOf.String() + " of command time" }

// Saw is what the target saw of the command's key, read once from its
// Witness (nil Witness: nothing). Read it after the command ended.
func (rec *Record) Saw(ctx context.Context) (Saw, error) {
	rec.sawOnce.Do(func() {
		if rec.Witness == nil {
			rec.saw = Saw{CreateBody: map[string]json.RawMessage{}}
			return
		}
		rec.saw, rec.sawErr = rec.Witness.Saw(ctx, rec)
		if rec.sawErr == nil && rec.WantKeyless && rec.unattributed {
			rec.sawErr = errUnattributed
		}
		if rec.sawErr == nil && rec.Keep != nil {
			rec.Keep(rec.saw)
		}
	})
	return rec.saw, rec.sawErr
}

// ObservedCalls is everything the command's recording proxy saw: its
// lifecycle calls and, where it records them, its endpoint (execd) calls,
// each once. While the command goes on it reads what the proxy recorded so
// far, without waiting for calls in flight: Calls and EndpointCalls wait (up
// to 10 s) until none is, and a subject always has one while a command
// streams, so the drills' progress watcher read the upload only once the
// next command had ended, and D5's kill came after the subject had already
// removed its sandbox (TestDockerCalibration).
func (rec *Record) ObservedCalls() []observe.Call {
	var calls []observe.Call
	calls = append(calls, rec.Observed...)      // kept once the command ended
	calls = append(calls, rec.EndpointCalls...) // likewise
	if rec.Proxy != nil {
		calls = append(calls, rec.Proxy.CallsSoFar()...) // while it runs
	}
	return dedupCalls(calls)
}

// dedupCalls drops repeated records of one exchange (a call may be found
// both among the observed calls and the proxy's endpoint calls).
func dedupCalls(calls []observe.Call) []observe.Call {
	type key struct {
		t                     time.Time
		method, path, sandbox string
		status                int
	}
	seen := map[key]bool{}
	out := calls[:0:0]
	for _, c := range calls {
		k := key{c.Time, c.Method, c.Path, c.SandboxID, c.Status}
		if !seen[k] {
			seen[k] = true
			out = append(out, c)
		}
	}
	return out
}

// WriteRecord stores what the grader saw of the command in the evidence
// file name, with fields of the caller's own besides the record's.
func (rec *Record) WriteRecord(name string, fields map[string]any) {
	out := map[string]any{
		"api_key_fp":    rec.KeyFP,
		"started_at":    rec.Started.UTC().Format(time.RFC3339Nano),
		"ended_at":      rec.Ended.UTC().Format(time.RFC3339Nano),
		"result":        rec.Res,
		"harness_error": errString(rec.Err),
	}
	if k := rec.Keyless(); len(k) > 0 {
		out["keyless_requests_seen_by_its_box"] = k
	}
	for k, v := range fields {
		out[k] = v
	}
	b, _ := json.MarshalIndent(out, "", "  ")
	_ = os.WriteFile(filepath.Join(rec.Dir, name), b, 0o644)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Ran says the command ran to an end of its own or its limit's making: it
// was started, within the submission's time, and did not time out.
func (rec *Record) Ran() bool {
	return rec.Err == nil && rec.Res != nil && !rec.BudgetSpent && !rec.Res.TimedOut
}
