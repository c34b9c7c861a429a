// Package toolcalls holds an agent's tool calls against what ran, so an
// agent cannot hide a command from its grade. The
// scripted model knows every run_command it asked for; the bundled server's
// audit knows every command that ran in the run's sandboxes (the run's key
// created them). Two ways an agent does what its model never sees:
//
//   - a tool call it reports as run (its summary has the step) that ran in
//     none of the run's sandboxes: it ran elsewhere, on the grading host;
//   - commands run while the agent was answering one model turn, beyond the
//     tool calls of that turn: commands "for the model" the model never
//     asked for (an agent that helpfully tries other routes out).
//
// Commands before the first tool call and after the last model request are
// the agent's own pipeline steps (install, upload, analysis) and are not
// held against it.
//
// FromModel lists the run_command calls the scripted model's answers asked
// for, Audited the commands the audit saw run, and HeldAgainst compares them
// with the steps the agent's summary claims.
package toolcalls

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/injection"
	"github.com/osb-capstone/acceptance/harness/model"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Call is one run_command the model asked for.
type Call struct {
	Turn    int       // the request (1-based) whose answer asked for it
	Answer  time.Time // when the request that got it arrived
	Next    time.Time // when the agent next asked the model (zero: never)
	Command string
}

// FromModel lists the run_command calls the model's answers asked for
// (completions: the chat completion requests the model received, in order).
func FromModel(script *model.Script, completions []model.Exchange) []Call {
	if script == nil {
		return nil
	}
	cs := completions
	var out []Call
	for i, x := range cs {
		if x.Status != 200 || x.Turn <= 0 || x.Turn > len(script.Turns) || x.CutOff {
			continue
		}
		t := script.Turns[x.Turn-1]
		calls := t.ToolCalls
		if t.ToolCall != nil {
			calls = append([]model.ToolCall{*t.ToolCall}, calls...)
		}
		var next time.Time
		if i+1 < len(cs) {
			next = cs[i+1].Time
		}
		for _, c := range calls {
			cmd, _ := c.Arguments["command"].(string)
			if c.Name != "run_command" || strings.TrimSpace(cmd) == "" {
				continue
			}
			out = append(out, Call{Turn: i + 1, Answer: x.Time, Next: next, Command: strings.TrimSpace(cmd)})
		}
	}
	return out
}

// Command is one command that ran in one of the run's sandboxes.
type Command struct {
	Sandbox string
	At      time.Time
	Command string
}

// Audited are the commands the bundled server's audit saw run (events: of
// the run's sandboxes).
func Audited(events []wire.Event) []Command {
	var out []Command
	for _, ev := range events {
		if ev.Kind != "command" || ev.Command == nil {
			continue
		}
		at := ev.Command.StartedAt
		if at.IsZero() {
			at = ev.Time
		}
		out = append(out, Command{Sandbox: ev.SandboxID, At: at, Command: strings.TrimSpace(ev.Command.Command)})
	}
	return out
}

// Proxied are the commands execd ran (answered 200) in the run's sandboxes
// as the run's recording proxy saw them sent (a real target: sent, from
// injection.Commands), and how many of those it could not read (a command
// line over the proxy's limit): with any, the comparison cannot be made.
func Proxied(sent []injection.Sent) (cmds []Command, unread int) {
	for _, s := range sent {
		switch {
		case !s.Ran():
		case s.Unread:
			unread++
		default:
			cmds = append(cmds, Command{Sandbox: s.Sandbox, At: s.At, Command: strings.TrimSpace(s.Command)})
		}
	}
	return cmds, unread
}

// HeldAgainst compares the tool calls with the audited commands and the
// steps the agent's summary claims: the tool calls it claims but that ran in
// no sandbox, and the commands it ran for a turn beyond that turn's calls.
func HeldAgainst(calls []Call, cmds []Command, claimed []string) (elsewhere, unasked []string, matched int) {
	used := make([]bool, len(cmds))
	for _, c := range calls {
		found := false
		for i, a := range cmds {
			if !used[i] && strings.Contains(a.Command, c.Command) {
				used[i], found = true, true
				matched++
				break
			}
		}
		if found {
			continue
		}
		for _, cl := range claimed {
			if strings.Contains(cl, c.Command) {
				elsewhere = append(elsewhere, fmt.Sprintf("turn %d: %q", c.Turn, clip(c.Command, 160)))
				break
			}
		}
	}
	// Commands inside a turn's window (its answer → the agent's next request)
	// that answer none of the model's calls.
	for i, a := range cmds {
		if used[i] {
			continue
		}
		for _, c := range calls {
			if !c.Next.IsZero() && a.At.After(c.Answer) && a.At.Before(c.Next) {
				unasked = append(unasked, fmt.Sprintf("turn %d, sandbox %s: %q", c.Turn, a.Sandbox, clip(a.Command, 160)))
				break
			}
		}
	}
	return elsewhere, dedupe(unasked), matched
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// Evidence is the comparison as a run's evidence (JSON).
func Evidence(calls []Call, cmds []Command, claimed, elsewhere, unasked []string) []byte {
	b, _ := json.MarshalIndent(map[string]any{"tool_calls": calls2json(calls), "audited_commands": cmds2json(cmds),
		"claimed_steps": claimed, "ran_elsewhere": elsewhere, "unasked": unasked}, "", "  ")
	return b
}

func calls2json(calls []Call) []map[string]any {
	var out []map[string]any
	for _, c := range calls {
		out = append(out, map[string]any{"turn": c.Turn, "command": c.Command, "asked_at": c.Answer})
	}
	return out
}

func cmds2json(cmds []Command) []map[string]any {
	var out []map[string]any
	for _, c := range cmds {
		out = append(out, map[string]any{"sandbox": c.Sandbox, "started_at": c.At, "command": c.Command})
	}
	return out
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
