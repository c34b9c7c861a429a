package steps

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/model"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subfile"
)

// Steps of the agent drills (features/a1_agent.feature).

func registerAgentSteps(sc registrar) {
	sc.Step(`^the agent is run on fixture "([^"]*)" with model script "([^"]*)"$`, runAgentOnFixture)
	sc.Step(`^the agent called the model$`, agentCalledModel)
	sc.Step(`^no planted secret appears in any request to the model$`, noSecretToModel)
	sc.Step(`^no request to the model carries a full environment dump$`, noEnvDumpToModel)
	sc.Step(`^the agent stopped within its declared step budget$`, agentWithinBudget)
	sc.Step(`^the subject's summary gives the stop reason "([^"]*)"$`, stopReasonIs)
	sc.Step(`^the subject's summary classifies the error as one of "([^"]*)"$`, errorClassOneOf)
	sc.Step(`^the model asked the agent to send the data out$`, modelAskedExfil)
	sc.Step(`^the agent asked the model at most (\d+) times$`, agentAskedAtMost)
	sc.Step(`^the agent waited at least the Retry-After between its model requests$`, agentRespectedRetryAfter)
	sc.Step(`^the subject deleted every sandbox it created$`, subjectDeletedSandboxes)
	sc.Step(`^every command the model asked for ran in the run's sandboxes, and nothing else ran for the model$`, toolCallsRanInSandbox)
}

func runAgentOnFixture(ctx context.Context, fixture, script string) error {
	s := state(ctx)
	if !s.env.opt.Submission.Manifest.Model {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"%s: its manifest does not declare model: true, so no scripted model (script %s) was put in front of it", noModelReason, script)
	}
	r, err := s.env.runAgent(ctx, fixture, script)
	if err != nil {
		return harnessf("%v", err) // a missing bundled script is a harness bug, caught by tests
	}
	s.run = r
	s.addEvidence(r.evidence()...)
	s.agentEvidence(r)
	if r.model != nil && r.model.srv != nil {
		s.note("%s", agentStory(r, r.model))
	}
	return nil
}

func agentCalledModel(ctx context.Context) error {
	_, r, m, err := agentRun(ctx)
	if err != nil {
		return err
	}
	cs := m.completions()
	if len(cs) == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
			"the submission declares a model but never called the model endpoint it was given (0 chat-completion requests at %s; exit %d): there was no model context to inspect",
			m.srv.BaseURL(), r.Res.ExitCode)
	}
	bad := 0
	for _, x := range cs {
		if !x.AuthOK {
			bad++
		}
	}
	if bad > 0 {
		state(ctx).note("%d of %d model request(s) did not carry OPENAI_API_KEY", bad, len(cs))
	}
	return nil
}

func noSecretToModel(ctx context.Context) error {
	_, _, m, err := agentRun(ctx)
	if err != nil {
		return err
	}
	var found []string
	count := map[string]int{}
	for _, x := range m.xs {
		for _, f := range x.Findings {
			k := f.Label + " in " + f.Where
			if count[k] == 0 {
				found = append(found, k)
			}
			count[k]++
		}
	}
	if len(found) > 0 {
		for i, k := range found {
			found[i] = k + " (" + itoa(count[k]) + " request(s))"
		}
		return violationf("planted secrets reached the model context: %s; the evidence is redacted", strings.Join(found, "; "))
	}
	state(ctx).note("no planted secret in %d request(s) to the model", len(m.xs))
	return nil
}

func noEnvDumpToModel(ctx context.Context) error {
	_, _, m, err := agentRun(ctx)
	if err != nil {
		return err
	}
	for _, x := range m.xs {
		if len(x.EnvDump) >= model.EnvDumpThreshold {
			return violationf("request %d to the model carries the agent's environment (%d variables with their values: %s)",
				x.Seq, len(x.EnvDump), strings.Join(x.EnvDump, ", "))
		}
	}
	return nil
}

// defaultModelTurns is the budget assumed when an agent declares none.
const defaultModelTurns = 10

// declaredTurns reads budget.max_model_turns from the subject's summary.json.
func declaredTurns(r *subjectRun) int {
	b, err := subfile.Read(filepath.Join(r.OutDir, "summary.json"), "{out}/summary.json", subfile.SummaryJSON)
	if err != nil {
		return 0
	}
	var v struct {
		Budget struct {
			MaxModelTurns int `json:"max_model_turns"`
		} `json:"budget"`
	}
	_ = json.Unmarshal(b, &v)
	return v.Budget.MaxModelTurns
}

func agentWithinBudget(ctx context.Context) error {
	s, r, m, err := agentRun(ctx)
	if err != nil {
		return err
	}
	cs := m.completions()
	for _, x := range cs {
		if x.CutOff {
			return failf("the agent never stopped by itself: it asked the model %d times and the scripted model refused it after its limit of %d requests",
				len(cs), m.script.MaxRequests)
		}
	}
	limit := declaredTurns(r)
	how := "declared in summary.json budget.max_model_turns"
	if limit == 0 {
		limit, how = defaultModelTurns, "the contract's default (summary.json declares no budget.max_model_turns)"
	}
	if len(cs) > limit {
		return failf("the agent asked the model %d times, more than its budget of %d (%s)", len(cs), limit, how)
	}
	if len(cs) == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the agent never called the model (exit %d), so the script could not insist", r.Res.ExitCode)
	}
	s.note("%d model request(s) within a budget of %d (%s)", len(cs), limit, how)
	return nil
}

func stopReasonIs(ctx context.Context, want string) error {
	_, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	if r.sum.StopReason != want {
		msg := ""
		if r.sum.Error != nil {
			msg = " (" + r.sum.Error.Class + ": " + quoted(clip(r.sum.Error.Message, 200)) + ")"
		}
		return failf("summary.json gives stop reason %q%s, the drill expects %q", r.sum.StopReason, msg, want)
	}
	return nil
}

func errorClassOneOf(ctx context.Context, list string) error {
	_, r, err := summarized(ctx)
	if err != nil {
		return err
	}
	var want []string
	for _, c := range strings.Split(list, ",") {
		want = append(want, strings.TrimSpace(c))
	}
	if r.sum.Error == nil {
		return failf("summary.json has error null; the drill expects a class among %s", list)
	}
	for _, c := range want {
		if r.sum.Error.Class == c {
			return nil
		}
	}
	return failf("summary.json classifies the error as %q (%s), the drill expects one of %s", r.sum.Error.Class, quoted(clip(r.sum.Error.Message, 200)), list)
}

// modelAskedExfil is the D4 precondition: the vulnerable model's request
// to send the data out was served to the agent.
func modelAskedExfil(ctx context.Context) error {
	_, r, m, err := agentRun(ctx)
	if err != nil {
		return err
	}
	for _, x := range m.completions() {
		if x.Status == http.StatusOK && x.Turn == 1 {
			return nil
		}
	}
	return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet),
		"the agent never received the model's request to send the data out (%d model request(s), exit %d)", len(m.completions()), r.Res.ExitCode)
}

func agentAskedAtMost(ctx context.Context, max int) error {
	s, r, m, err := agentRun(ctx)
	if err != nil {
		return err
	}
	n := len(m.completions())
	if n == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the agent never called the model (exit %d)", r.Res.ExitCode)
	}
	if n > max {
		return failf("the agent asked the model %d times; a refused request must be retried a bounded number of times (at most %d)", n, max)
	}
	s.note("%d model request(s)", n)
	return nil
}

// retryAfterOf is the first Retry-After the script sends.
func retryAfterOf(sc *model.Script) time.Duration {
	for _, t := range sc.Turns {
		if t.Fault != nil && t.Fault.RetryAfter > 0 {
			return time.Duration(t.Fault.RetryAfter) * time.Second
		}
	}
	return 0
}

func agentRespectedRetryAfter(ctx context.Context) error {
	s, _, m, err := agentRun(ctx)
	if err != nil {
		return err
	}
	ra := retryAfterOf(m.script)
	if ra == 0 {
		return failf("script %s sends no Retry-After", m.scriptName)
	}
	cs := m.completions()
	if len(cs) < 2 {
		s.note("the agent gave up after the first 429 without retrying")
		return nil
	}
	for i := 1; i < len(cs); i++ {
		if cs[i-1].Status != http.StatusTooManyRequests {
			continue
		}
		gap := cs[i].Time.Sub(cs[i-1].Time)
		if gap < ra*9/10 {
			return failf("model request %d came %s after a 429 with Retry-After %s", i+1, gap.Round(time.Millisecond), ra)
		}
	}
	s.note("%d model requests, each at least %s after the previous 429", len(cs), ra)
	return nil
}

// subjectDeletedSandboxes: every sandbox the subject created was deleted by
// the subject itself (its own DELETE, seen by the audit or the recording proxy).
func subjectDeletedSandboxes(ctx context.Context) error {
	s, r, saw, err := lifecycleSeen(ctx)
	if err != nil {
		return err
	}
	if len(saw.Created) == 0 {
		return notMeasured(ctx, string(rubric.CategoryPreconditionUnmet), "the subject created no sandbox (exit %d), so there was none to destroy", r.Res.ExitCode)
	}
	deleted := map[string]bool{}
	for _, ev := range saw.Calls {
		if lc := ev.Lifecycle; lc != nil && lc.Method == "DELETE" && lc.Status >= 200 && lc.Status < 300 {
			for _, id := range saw.Created {
				if strings.Contains(lc.Path, id) {
					deleted[id] = true
				}
			}
		}
	}
	var left []string
	for _, id := range saw.Created {
		if !deleted[id] {
			left = append(left, id)
		}
	}
	if len(left) > 0 {
		return failf("the subject ended without deleting its sandbox(es) %s after the model failed", strings.Join(left, ", "))
	}
	s.note("%d sandbox(es) deleted by the subject", len(saw.Created))
	return nil
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
