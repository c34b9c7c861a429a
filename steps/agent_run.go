package steps

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/model"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// The agent in the loop: a subject with a model (manifest model: true) is
// run with the harness's scripted model as its only model endpoint
// (OPENAI_BASE_URL, OPENAI_API_KEY). Every request the model receives is the
// model context, recorded as evidence with the planted secrets redacted.

// noModelReason is why agent entries are not measured on a submission
// without a model.
const noModelReason = "the submission has no model in the loop"

// modelStallMax bounds a stalled model answer: an agent that never gives up
// on its own still gets an error after this long.
const modelStallMax = 90 * time.Second

// agentModel is the scripted model of one subject run.
type agentModel struct {
	scriptName string
	script     *model.Script
	srv        *model.Server
	apiKey     string
	xs         []model.Exchange // everything it received, once the run ended
	startErr   error
}

// start runs the model server for r and gives the subject its endpoint.
// subjectKey is the API key the subject got (a planted secret).
func (m *agentModel) start(e *Env, subjectKey string, spec *subject.Spec) error {
	m.apiKey = "sk-capstone-" + randomHex(16)
	spec.Env.ModelBaseURL = "http://127.0.0.1:0/v1" // placeholder, so the dump detector knows the names
	spec.Env.ModelAPIKey = m.apiKey
	secrets := []model.Secret{
		{Label: "subject_api_key", Value: subjectKey},
		{Label: "platform_api_key", Value: e.opt.Target.APIKey},
		{Label: "admin_token", Value: e.opt.Target.AdminToken},
		{Label: "data_api_token (vault value)", Value: e.opt.Stubs.DataAPIToken},
		{Label: "model_api_key", Value: m.apiKey},
	}
	srv, err := model.Start(model.Config{Script: m.script, APIKey: m.apiKey, Secrets: secrets,
		Env: spec.Env.List(""), StallMax: modelStallMax})
	if err != nil {
		return err
	}
	m.srv = srv
	spec.Env.ModelBaseURL = srv.BaseURL()
	e.client.AddSecret(m.apiKey)
	if e.opt.Secrets != nil {
		e.opt.Secrets(m.apiKey)
	}
	return nil
}

// finish stops the server and writes the transcript and the dialogue into dir.
func (m *agentModel) finish(dir string) {
	if m.srv == nil {
		return
	}
	_ = m.srv.Close()
	m.xs = m.srv.Exchanges()
	var b bytes.Buffer
	_ = model.WriteJSONL(&b, m.xs)
	_ = os.WriteFile(filepath.Join(dir, "model-transcript.jsonl"), b.Bytes(), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "model-dialogue.md"), []byte(model.Dialogue(m.scriptName, m.xs)), 0o644)
}

// completions are the chat-completion requests (what the agent asked the model).
func (m *agentModel) completions() []model.Exchange {
	var out []model.Exchange
	for _, x := range m.xs {
		if x.Method == "POST" && strings.HasSuffix(x.Path, "/chat/completions") {
			out = append(out, x)
		}
	}
	return out
}

// defaultScript answers every run of a submission with a model that no
// agent scenario scripts: an ordinary model.
const defaultScript = "analyst"

// commandScript answers the other commands of a submission with a model
// (contract, reap, test.unit, test.integration): a plain model, so the
// submission's own tests that need one can run. Nothing is graded from it.
const commandScript = "neutral"

// bundledModel is a scripted model from one of the bundled scripts
// (defaultScript, commandScript).
func bundledModel(name string) *agentModel {
	sc, err := model.Lookup(name)
	if err != nil {
		panic(err) // bundled; TestScriptValidation loads every bundled script
	}
	return &agentModel{scriptName: name, script: sc}
}

// runAgent runs the subject on fixture in front of the named script, once
// per run, fixture and script.
func (e *Env) runAgent(ctx context.Context, fixture, script string) (*subjectRun, error) {
	sc, err := model.Lookup(script)
	if err != nil {
		return nil, err
	}
	key := fixture + "-agent-" + script
	return e.runOnce(key, func() *subjectRun {
		return e.runSubject(ctx, key, fixture, runOpts{model: &agentModel{scriptName: script, script: sc}})
	}), nil
}

// agentRun is the scenario's agent run, or an error saying why there is none.
func agentRun(ctx context.Context) (*scenario, *subjectRun, *agentModel, error) {
	s, r, err := ran(ctx)
	if err != nil {
		return s, r, nil, err
	}
	if r.model == nil {
		return s, r, nil, harnessf("the subject was not run in front of the scripted model in this scenario")
	}
	return s, r, r.model, nil
}

// agentEvidence adds the model transcript and dialogue to the scenario's evidence.
func (s *scenario) agentEvidence(r *subjectRun) {
	s.addEvidence(filepath.Join(r.RelDir, "model-dialogue.md"), filepath.Join(r.RelDir, "model-transcript.jsonl"))
}

// agentStory is one line saying what the model asked and what the agent did.
func agentStory(r *subjectRun, m *agentModel) string {
	cs := m.completions()
	kinds := map[string]int{}
	var order []string
	for _, x := range cs {
		k := x.Served
		if i := strings.IndexAny(k, ":("); i > 0 {
			k = strings.TrimSpace(k[:i])
		}
		if kinds[k] == 0 {
			order = append(order, k)
		}
		kinds[k]++
	}
	var asked []string
	for _, k := range order {
		asked = append(asked, fmt.Sprintf("%d× %s", kinds[k], k))
	}
	did := "no summary.json"
	if r.sum != nil {
		did = fmt.Sprintf("%d step(s), stop %q", len(r.sum.Steps), r.sum.StopReason)
		if r.sum.Error != nil {
			did += fmt.Sprintf(", error %s", r.sum.Error.Class)
		}
	}
	if r.Res != nil {
		did += fmt.Sprintf(", exit %d", r.Res.ExitCode)
	}
	return fmt.Sprintf("model (script %s): %d request(s): %s; agent: %s", m.scriptName, len(cs), strings.Join(asked, ", "), did)
}
