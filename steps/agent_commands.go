package steps

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/osb-capstone/acceptance/harness/injection"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/toolcalls"
)

// The agent's tool calls held against what ran (harness/toolcalls).

// toolCallsRanInSandbox is the step: every run_command the model asked for
// that the agent reports as run ran in one of the run's sandboxes, and the
// agent ran nothing for a model turn beyond what the model asked.
func toolCallsRanInSandbox(ctx context.Context) error {
	s, r, m, err := agentRun(ctx)
	if err != nil {
		return err
	}
	saw, err := r.Saw(ctx)
	if err != nil {
		return harnessf("reading the audit trail: %v", err)
	}
	calls := toolcalls.FromModel(m.script, m.completions())
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
	// What ran: the bundled server's audit, or on a real target the run's
	// recording proxy (the execd commands it saw the run send to its own
	// sandboxes, each with the time it was sent).
	cmds, ranFrom := toolcalls.Audited(saw.Events), "audit.json"
	if !s.env.mock() {
		var unread int
		cmds, unread = toolcalls.Proxied(injection.Commands(r.EndpointCalls, saw.Created))
		ranFrom = "endpoint-calls.json"
		if unread > 0 {
			return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget),
				"the recording proxy keeps a command line only up to 1 MiB of request body: %d command(s) that ran in the run's sandboxes could not be read, so the model's tool calls cannot be held against what ran", unread)
		}
	}
	elsewhere, unasked, matched := toolcalls.HeldAgainst(calls, cmds, claimed)
	b := toolcalls.Evidence(calls, cmds, claimed, elsewhere, unasked)
	if err := os.WriteFile(filepath.Join(r.Dir, "tool-calls-vs-commands.json"), b, 0o644); err == nil {
		s.addEvidence(filepath.Join(r.RelDir, "tool-calls-vs-commands.json"), filepath.Join(r.RelDir, ranFrom))
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
