// Package vanish reads what a subject saw once its sandbox vanished under
// it (drill D2, "expire-mid-run"): the answers to its calls for that
// sandbox at or after the fault, from the bundled server's audit
// (AnswersFromAudit: lifecycle and proxy calls, execd commands and file
// operations, calls its dead execd endpoint recorded) or from a real
// target's recording proxy (AnswersFromCalls).
//
// D2 is judged on that symptom (Judge). The course says a vanished sandbox
// answers 404 or a connection failure, and the subject must then report
// sandbox_gone. An answer the drill did not intend, such as a 5xx from the
// grader's own server (or the target's), is the platform's fault
// (Symptom.Unintended): the entry is a harness error naming it, never
// failed. Evidence is the record of that judgement the report links.
package vanish

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/summary"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// ExecdAfterRemovalKind is the audit kind the bundled server records for a
// call to the execd endpoint of a sandbox that is gone (its port keeps
// listening and records method and path).
const ExecdAfterRemovalKind = "execd_after_removal"

// Answer is one answer the subject got for the vanished sandbox.
type Answer struct {
	Time   time.Time
	Call   string // e.g. "GET /v1/sandboxes/x", "execd POST /files/upload"
	Status int    // 0: a connection failure (reset, refused, cut mid-stream)
	Detail string // the error body's start, or the connection error
}

func (a Answer) String() string {
	if a.Status == 0 {
		return fmt.Sprintf("%s → connection failure (%s)", a.Call, a.Detail)
	}
	if a.Detail != "" {
		return fmt.Sprintf("%s → %d %s", a.Call, a.Status, a.Detail)
	}
	return fmt.Sprintf("%s → %d", a.Call, a.Status)
}

// Gone: the answer the course names for a vanished sandbox.
func (a Answer) Gone() bool { return a.Status == 0 || a.Status == 404 }

// InFlightAtRemoval: a call the bundled server's execd endpoint reset
// because its sandbox was removed while it ran; it was made before the
// disappearance (D2 does not count it as a call to the vanished sandbox).
func InFlightAtRemoval(ev wire.Event) bool {
	return ev.ExecdAfterRemoval != nil && ev.ExecdAfterRemoval.Note == wire.AfterRemovalInFlight
}

// StatusClientClosed is the status the bundled server's audit gives an execd
// exchange whose client hung up before any answer (499): no answer the
// subject saw.
const StatusClientClosed = 499

// AnswerLimit is how many of the first answers are kept and shown.
const AnswerLimit = 3

// statusPrefix is how the bundled server's audit records a command that
// execd (or the endpoint in front of it) answered with an error status.
var statusPrefix = regexp.MustCompile(`^status (\d{3}): ?(.*)$`)

// AnswersFromAudit reads the bundled server's audit: the answers to calls
// for sandbox id recorded at or after the fault (lifecycle and proxy calls,
// execd commands and file operations, calls its execd endpoint reset), in
// order, successes included (a call that the removal had not reached yet).
func AnswersFromAudit(events []wire.Event, id string, at time.Time) []Answer {
	var out []Answer
	for _, ev := range events {
		if ev.SandboxID != id || ev.Time.Before(at) {
			continue
		}
		switch {
		case ev.Lifecycle != nil && ev.Kind == "lifecycle":
			lc := ev.Lifecycle
			out = append(out, Answer{Time: ev.Time, Call: lc.Method + " " + lc.Path, Status: lc.Status})
		case ev.Command != nil && ev.Kind == "command":
			c := ev.Command
			a := Answer{Time: ev.Time, Call: "execd command " + strconv.Quote(clip(c.Command, 60)), Status: 200}
			switch m := statusPrefix.FindStringSubmatch(c.Error); {
			case m != nil && m[1] == strconv.Itoa(StatusClientClosed):
				continue // its client hung up: nothing was answered
			case m != nil:
				a.Status, _ = strconv.Atoi(m[1])
				a.Detail = clip(m[2], 200)
			case strings.HasPrefix(c.Error, "killed: sandbox removed"):
				a.Status, a.Detail = 0, "its stream was cut: "+c.Error
			case c.ExitCode == nil && !c.Background:
				continue // still running when recorded: no answer yet
			}
			out = append(out, a)
		case ev.File != nil && ev.Kind == "file":
			f := ev.File
			if f.Op == "final-manifest" {
				continue // the removal's own record, no call of the subject
			}
			if f.Status == StatusClientClosed {
				continue // its client hung up: nothing was answered
			}
			out = append(out, Answer{Time: ev.Time, Call: "execd " + f.Op + " " + f.Path, Status: f.Status})
		case ev.ExecdAfterRemoval != nil && ev.Kind == ExecdAfterRemovalKind:
			ar := ev.ExecdAfterRemoval
			call := "execd " + strings.TrimSpace(ar.Method+" "+ar.Path)
			if ar.Method == "" {
				call = "execd connection"
			}
			why := "connection reset: the sandbox is gone"
			if ar.Note != "" {
				why = "connection reset: " + ar.Note
			}
			out = append(out, Answer{Time: ev.Time, Call: call, Status: 0, Detail: why})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// AnswersFromCalls reads a real target's recording proxy: the calls for
// sandbox id at or after the fault, in order (status 0: the connection
// failed).
func AnswersFromCalls(calls []command.Call, id string, at time.Time) []Answer {
	var out []Answer
	for _, c := range calls {
		if c.SandboxID != id || c.Time.Before(at) {
			continue
		}
		call := c.Method + " " + c.Path
		if _, ok := command.ExecdPath(c.Path); ok || c.Port != 0 {
			call = "execd " + call
		}
		a := Answer{Time: c.Time, Call: call, Status: c.Status, Detail: clip(c.Answer, 200)}
		if a.Status == 0 && a.Detail == "" {
			a.Detail = "no answer"
		}
		out = append(out, a)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// Symptom is what the subject met once the fault took effect: its first
// failed answers (non-2xx; a success came before the removal reached the
// sandbox), at most AnswerLimit. Unintended names the first of them that
// is neither 404 nor a connection failure and is a server error (5xx): a
// symptom the drill did not intend, the platform's, never the subject's.
type Symptom struct {
	First      []Answer
	Unintended *Answer
}

func Judge(answers []Answer) Symptom {
	var s Symptom
	for i := range answers {
		a := answers[i]
		if a.Status >= 200 && a.Status < 300 {
			continue
		}
		if len(s.First) < AnswerLimit {
			s.First = append(s.First, a)
		}
		if s.Unintended == nil && a.Status >= 500 {
			s.Unintended = &a
		}
		if len(s.First) == AnswerLimit && s.Unintended != nil {
			break
		}
	}
	// An unintended answer after a 404 or a connection failure is still the
	// platform misbehaving, and the subject may have reported that one: a
	// harness error too.
	return s
}

// String is the symptom as the report shows it next to the verdict.
func (s Symptom) String() string {
	if len(s.First) == 0 {
		return "no failed answer to a call for the sandbox was recorded after the fault"
	}
	parts := make([]string, len(s.First))
	for i, a := range s.First {
		parts[i] = a.String()
	}
	return strings.Join(parts, "; ")
}

// EvidenceLimit bounds the answers kept in the evidence file.
const EvidenceLimit = 50

// Evidence is what the subject saw after the fault as the evidence of a
// run's D2 verdict: the judged symptom and the answers, successes included,
// at most EvidenceLimit (JSON).
func Evidence(sandbox string, faultAt time.Time, answers []Answer, sym Symptom) []byte {
	type answer struct {
		Time   time.Time `json:"time"`
		Call   string    `json:"call"`
		Status int       `json:"status"` // 0: connection failure
		Detail string    `json:"detail,omitempty"`
	}
	doc := struct {
		Sandbox    string   `json:"sandbox"`
		FaultAt    string   `json:"fault_at"`
		Symptom    string   `json:"symptom"`
		Unintended string   `json:"unintended,omitempty"`
		Answers    []answer `json:"answers"`
		Cut        int      `json:"answers_not_shown,omitempty"`
	}{Sandbox: sandbox, FaultAt: faultAt.UTC().Format(time.RFC3339Nano), Symptom: sym.String(), Answers: []answer{}}
	if sym.Unintended != nil {
		doc.Unintended = sym.Unintended.String()
	}
	for i, a := range answers {
		if i == EvidenceLimit {
			doc.Cut = len(answers) - i
			break
		}
		doc.Answers = append(doc.Answers, answer{a.Time.UTC(), a.Call, a.Status, a.Detail})
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return b
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// Calls are the calls a subject made to its vanished sandbox after it
// disappeared (CallsAfter).
type Calls struct {
	Execd     int      // to its dead execd endpoint
	Lifecycle int      // lifecycle calls with the run's key (DELETEs that clean up handles left out)
	Seen      []string // what each was, for the reason
}

// CallsAfter counts the calls to sandbox id at or after the fault: on the
// bundled server the calls its dead execd endpoint recorded (one the
// removal cut while it ran was made before: not counted) and the run's
// lifecycle calls (saw); on a real target the execd calls the recording
// proxy saw (observed: where it routes the sandbox endpoints, the same
// observations that timed the fault) and the lifecycle calls through it.
func CallsAfter(saw command.Saw, observed []command.Call, bundled bool, id string, at time.Time) Calls {
	var c Calls
	for _, ev := range saw.Events {
		if ev.SandboxID != id || ev.Time.Before(at) {
			continue
		}
		if ev.Kind == ExecdAfterRemovalKind {
			if InFlightAtRemoval(ev) {
				continue // made before the disappearance; the removal cut it
			}
			c.Execd++
			c.Seen = append(c.Seen, "execd after removal")
		}
	}
	if !bundled {
		n, what := command.ExecdCallsAfter(observed, id, at)
		c.Execd += n
		c.Seen = append(c.Seen, what...)
	}
	for _, ev := range saw.Calls {
		if lc := ev.Lifecycle; lc != nil && ev.SandboxID == id && !ev.Time.Before(at) && lc.Method != "DELETE" {
			if _, isExecd := command.ExecdPath(lc.Path); isExecd && !bundled {
				continue // counted above
			}
			c.Lifecycle++
			c.Seen = append(c.Seen, fmt.Sprintf("%s %s → %d", lc.Method, lc.Path, lc.Status))
		}
	}
	return c
}

// FailedSteps counts the steps of a subject's summary that failed or never
// finished.
func FailedSteps(steps []summary.Step) int {
	n := 0
	for _, st := range steps {
		if st.ExitCode == nil || *st.ExitCode != 0 {
			n++
		}
	}
	return n
}
