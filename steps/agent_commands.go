package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/model"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// The agent's tool calls held against what ran, so an agent cannot hide a
// command from its grade. The
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

// toolCall is one run_command the model asked for.
type toolCall struct {
	turn    int       // the request (1-based) whose answer asked for it
	answer  time.Time // when the request that got it arrived
	next    time.Time // when the agent next asked the model (zero: never)
	command string
}

// modelToolCalls lists the run_command calls the model's answers asked for.
func modelToolCalls(m *agentModel) []toolCall {
	if m == nil || m.script == nil {
		return nil
	}
	cs := m.completions()
	var out []toolCall
	for i, x := range cs {
		if x.Status != 200 || x.Turn <= 0 || x.Turn > len(m.script.Turns) || x.CutOff {
			continue
		}
		t := m.script.Turns[x.Turn-1]
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
			out = append(out, toolCall{turn: i + 1, answer: x.Time, next: next, command: strings.TrimSpace(cmd)})
		}
	}
	return out
}

// auditedCommand is one command that ran in one of the run's sandboxes.
type auditedCommand struct {
	sandbox string
	at      time.Time
	command string
}

func auditedCommands(events []wire.Event) []auditedCommand {
	var out []auditedCommand
	for _, ev := range events {
		if ev.Kind != "command" || ev.Command == nil {
			continue
		}
		at := ev.Command.StartedAt
		if at.IsZero() {
			at = ev.Time
		}
		out = append(out, auditedCommand{sandbox: ev.SandboxID, at: at, command: strings.TrimSpace(ev.Command.Command)})
	}
	return out
}

// heldAgainst compares the tool calls with the audited commands and the
// steps the agent's summary claims: the tool calls it claims but that ran in
// no sandbox, and the commands it ran for a turn beyond that turn's calls.
func heldAgainst(calls []toolCall, cmds []auditedCommand, claimed []string) (elsewhere, unasked []string, matched int) {
	used := make([]bool, len(cmds))
	for _, c := range calls {
		found := false
		for i, a := range cmds {
			if !used[i] && strings.Contains(a.command, c.command) {
				used[i], found = true, true
				matched++
				break
			}
		}
		if found {
			continue
		}
		for _, cl := range claimed {
			if strings.Contains(cl, c.command) {
				elsewhere = append(elsewhere, fmt.Sprintf("turn %d: %q", c.turn, clip(c.command, 160)))
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
			if !c.next.IsZero() && a.at.After(c.answer) && a.at.Before(c.next) {
				unasked = append(unasked, fmt.Sprintf("turn %d, sandbox %s: %q", c.turn, a.sandbox, clip(a.command, 160)))
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

// toolCallsRanInSandbox is the step: every run_command the model asked for
// that the agent reports as run ran in one of the run's sandboxes, and the
// agent ran nothing for a model turn beyond what the model asked.
func toolCallsRanInSandbox(ctx context.Context) error {
	s, r, m, err := agentRun(ctx)
	if err != nil {
		return err
	}
	if !s.env.mock() {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
			"target %s shows no commands run inside a sandbox (execd calls do not pass the recording proxy), so the model's tool calls cannot be held against what ran", s.env.opt.Target.Kind)
	}
	if err := s.env.loadAudit(ctx, r); err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	calls := modelToolCalls(m)
	if len(calls) == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the model asked for no run_command in this run (%d model request(s), exit %d), so there was no tool call to hold against what ran", len(m.completions()), r.Res.ExitCode)
	}
	var claimed []string
	if r.sum != nil {
		for _, st := range r.sum.Steps {
			claimed = append(claimed, st.Command)
		}
	}
	cmds := auditedCommands(r.audit)
	elsewhere, unasked, matched := heldAgainst(calls, cmds, claimed)
	b, _ := json.MarshalIndent(map[string]any{"tool_calls": calls2json(calls), "audited_commands": cmds2json(cmds),
		"claimed_steps": claimed, "ran_elsewhere": elsewhere, "unasked": unasked}, "", "  ")
	if err := os.WriteFile(filepath.Join(r.Dir, "tool-calls-vs-commands.json"), b, 0o644); err == nil {
		s.addEvidence(filepath.Join(r.RelDir, "tool-calls-vs-commands.json"), filepath.Join(r.RelDir, "audit.json"))
	}
	var problems []string
	if len(elsewhere) > 0 {
		problems = append(problems, fmt.Sprintf("the agent's summary reports the model's command(s) as run, but none ran in the run's sandboxes (they ran elsewhere, outside the sandbox): %s", strings.Join(elsewhere, "; ")))
	}
	if len(unasked) > 0 {
		problems = append(problems, fmt.Sprintf("the agent ran command(s) for the model that the model never asked for: %s", strings.Join(unasked, "; ")))
	}
	if len(problems) > 0 {
		return violationf("%s", strings.Join(problems, "; "))
	}
	s.note("%d of the model's %d run_command call(s) ran in the run's sandboxes; nothing else ran for the model", matched, len(calls))
	return nil
}

func calls2json(calls []toolCall) []map[string]any {
	var out []map[string]any
	for _, c := range calls {
		out = append(out, map[string]any{"turn": c.turn, "command": c.command, "asked_at": c.answer})
	}
	return out
}

func cmds2json(cmds []auditedCommand) []map[string]any {
	var out []map[string]any
	for _, c := range cmds {
		out = append(out, map[string]any{"sandbox": c.sandbox, "started_at": c.at, "command": c.command})
	}
	return out
}
