package steps

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Drill D2 is judged on what the subject saw (issue 27): the first answers
// it got for its sandbox after the fault. The course says a vanished sandbox
// answers 404 or a connection failure, and the subject must then report
// sandbox_gone. An answer the drill did not intend, such as a 5xx from the
// grader's own server (or the target's), is the platform's fault: the entry
// is a harness error naming it, never failed.

// d2Answer is one answer the subject got for the vanished sandbox.
type d2Answer struct {
	Time   time.Time
	Call   string // e.g. "GET /v1/sandboxes/x", "execd POST /files/upload"
	Status int    // 0: a connection failure (reset, refused, cut mid-stream)
	Detail string // the error body's start, or the connection error
}

func (a d2Answer) String() string {
	if a.Status == 0 {
		return fmt.Sprintf("%s → connection failure (%s)", a.Call, a.Detail)
	}
	if a.Detail != "" {
		return fmt.Sprintf("%s → %d %s", a.Call, a.Status, a.Detail)
	}
	return fmt.Sprintf("%s → %d", a.Call, a.Status)
}

// gone: the answer the course names for a vanished sandbox.
func (a d2Answer) gone() bool { return a.Status == 0 || a.Status == 404 }

// inFlightAtRemoval: a call the bundled server's execd endpoint reset
// because its sandbox was removed while it ran; it was made before the
// disappearance (D2 does not count it as a call to the vanished sandbox).
func inFlightAtRemoval(ev wire.Event) bool {
	return ev.ExecdAfterRemoval != nil && ev.ExecdAfterRemoval.Note == wire.AfterRemovalInFlight
}

// statusClientClosed is the status the bundled server's audit gives an execd
// exchange whose client hung up before any answer (499): no answer the
// subject saw.
const statusClientClosed = 499

// d2AnswerLimit is how many of the first answers are kept and shown.
const d2AnswerLimit = 3

// statusPrefix is how the bundled server's audit records a command that
// execd (or the endpoint in front of it) answered with an error status.
var statusPrefix = regexp.MustCompile(`^status (\d{3}): ?(.*)$`)

// d2AnswersFromAudit reads the bundled server's audit: the answers to calls
// for sandbox id recorded at or after the fault (lifecycle and proxy calls,
// execd commands and file operations, calls its execd endpoint reset), in
// order, successes included (a call that the removal had not reached yet).
func d2AnswersFromAudit(events []wire.Event, id string, at time.Time) []d2Answer {
	var out []d2Answer
	for _, ev := range events {
		if ev.SandboxID != id || ev.Time.Before(at) {
			continue
		}
		switch {
		case ev.Lifecycle != nil && ev.Kind == "lifecycle":
			lc := ev.Lifecycle
			out = append(out, d2Answer{Time: ev.Time, Call: lc.Method + " " + lc.Path, Status: lc.Status})
		case ev.Command != nil && ev.Kind == "command":
			c := ev.Command
			a := d2Answer{Time: ev.Time, Call: "execd command " + strconv.Quote(clip(c.Command, 60)), Status: 200}
			switch m := statusPrefix.FindStringSubmatch(c.Error); {
			case m != nil && m[1] == strconv.Itoa(statusClientClosed):
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
			if f.Status == statusClientClosed {
				continue // its client hung up: nothing was answered
			}
			out = append(out, d2Answer{Time: ev.Time, Call: "execd " + f.Op + " " + f.Path, Status: f.Status})
		case ev.ExecdAfterRemoval != nil && ev.Kind == execdAfterRemovalKind:
			ar := ev.ExecdAfterRemoval
			call := "execd " + strings.TrimSpace(ar.Method+" "+ar.Path)
			if ar.Method == "" {
				call = "execd connection"
			}
			why := "connection reset: the sandbox is gone"
			if ar.Note != "" {
				why = "connection reset: " + ar.Note
			}
			out = append(out, d2Answer{Time: ev.Time, Call: call, Status: 0, Detail: why})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// d2AnswersFromCalls reads a real target's recording proxy: the calls for
// sandbox id at or after the fault, in order (status 0: the connection
// failed).
func d2AnswersFromCalls(calls []command.Call, id string, at time.Time) []d2Answer {
	var out []d2Answer
	for _, c := range calls {
		if c.SandboxID != id || c.Time.Before(at) {
			continue
		}
		call := c.Method + " " + c.Path
		if _, ok := execdPath(c.Path); ok || c.Port != 0 {
			call = "execd " + call
		}
		a := d2Answer{Time: c.Time, Call: call, Status: c.Status, Detail: clip(c.Answer, 200)}
		if a.Status == 0 && a.Detail == "" {
			a.Detail = "no answer"
		}
		out = append(out, a)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out
}

// d2DrillName is the drill whose symptom is judged here (expireAfterFirstCommand).
const d2DrillName = "expire-mid-run"

// d2Symptom is what the subject met once the fault took effect: its first
// failed answers (non-2xx; a success came before the removal reached the
// sandbox), at most d2AnswerLimit. unintended names the first of them that
// is neither 404 nor a connection failure and is a server error (5xx): a
// symptom the drill did not intend, the platform's, never the subject's.
type d2Symptom struct {
	first      []d2Answer
	unintended *d2Answer
}

func judgeD2Symptom(answers []d2Answer) d2Symptom {
	var s d2Symptom
	for i := range answers {
		a := answers[i]
		if a.Status >= 200 && a.Status < 300 {
			continue
		}
		if len(s.first) < d2AnswerLimit {
			s.first = append(s.first, a)
		}
		if s.unintended == nil && a.Status >= 500 {
			s.unintended = &a
		}
		if len(s.first) == d2AnswerLimit && s.unintended != nil {
			break
		}
	}
	// An unintended answer after a 404 or a connection failure is still the
	// platform misbehaving, and the subject may have reported that one: a
	// harness error too.
	return s
}

// String is the symptom as the report shows it next to the verdict.
func (s d2Symptom) String() string {
	if len(s.first) == 0 {
		return "no failed answer to a call for the sandbox was recorded after the fault"
	}
	parts := make([]string, len(s.first))
	for i, a := range s.first {
		parts[i] = a.String()
	}
	return strings.Join(parts, "; ")
}

// d2RunAnswers are the answers for run r's vanished sandbox at or after the
// fault: the bundled server's audit (loaded), or a real target's recording
// proxy.
func (e *Env) d2RunAnswers(r *subjectRun) []d2Answer {
	if e.mock() {
		return d2AnswersFromAudit(r.audit, r.faultSandbox, r.faultAt)
	}
	return d2AnswersFromCalls(observedCalls(r), r.faultSandbox, r.faultAt)
}

// d2RunSymptom is the symptom of run r's D2 fault.
func (e *Env) d2RunSymptom(r *subjectRun) d2Symptom { return judgeD2Symptom(e.d2RunAnswers(r)) }

// d2EvidenceLimit bounds the answers kept in the evidence file.
const d2EvidenceLimit = 50

// d2Evidence writes what the subject saw after the fault (the judged
// symptom and the answers, successes included, at most d2EvidenceLimit) as
// evidence of the run's D2 verdict; it returns the bundle-relative path.
func (s *scenario) d2Evidence(r *subjectRun, answers []d2Answer, sym d2Symptom) string {
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
	}{Sandbox: r.faultSandbox, FaultAt: r.faultAt.UTC().Format(time.RFC3339Nano), Symptom: sym.String(), Answers: []answer{}}
	if sym.unintended != nil {
		doc.Unintended = sym.unintended.String()
	}
	for i, a := range answers {
		if i == d2EvidenceLimit {
			doc.Cut = len(answers) - i
			break
		}
		doc.Answers = append(doc.Answers, answer{a.Time.UTC(), a.Call, a.Status, a.Detail})
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return s.env.writeEvidence(firstID(s), "d2-first-answers-"+s.slug()+".json", b)
}
