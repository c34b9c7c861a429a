package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/subfile"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// M0: the submission's own raw-HTTP contract check. Its record
// ({out}/contract.json) must hold the five exchanges with the right status
// codes, and the server must have seen the same request lines and statuses
// from that invocation (its own API key; the keyless one while it ran).
// The harness's own contract check is the target preflight (harness/core),
// never scored.

func registerContractSteps(sc registrar) {
	sc.Step(`^the submission's contract check is run$`, runContract)
	sc.Step(`^its record holds create 202, endpoint 200 without a scheme, unauthorized 401, delete 204 and get after delete 404$`, contractRecordShape)
	sc.Step(`^every exchange in its record is one the server saw from that invocation$`, contractMatchesServer)
}

// contractExchange is one entry of {out}/contract.json.
type contractExchange struct {
	Step   string         `json:"step"`
	Method string         `json:"method"`
	Path   string         `json:"path"`
	Status int            `json:"status"`
	Fields map[string]any `json:"fields"`
}

// contractSteps are the exchanges M0 needs, with their status.
var contractSteps = []struct {
	step, method string
	status       int
}{
	{"create", "POST", 202}, {"endpoint", "GET", 200}, {"unauthorized", "POST", 401},
	{"delete", "DELETE", 204}, {"get_after_delete", "GET", 404},
}

func runContract(ctx context.Context) error {
	s := state(ctx)
	cmd := s.env.sub().Manifest.Contract
	if cmd == "" {
		return failf("%s, so no contract check ran and nothing of M0 was recorded", s.env.sub().Missing("contract"))
	}
	s.inv = s.env.invoke(ctx, "contract", cmd, "subject-contract", s.env.opt.RunID+"-contract", 5*time.Minute)
	s.addEvidence(s.inv.evidence()...)
	if err := s.inv.Judge(ctx); err != nil {
		return err
	}
	if s.inv.Res.ExitCode != 0 {
		return failf("the submission's contract command exited %d (stderr: %s)", s.inv.Res.ExitCode, tailFile(s.inv.Res.StderrPath, 400))
	}
	return nil
}

// contractRecord reads {out}/contract.json of the scenario's invocation.
func contractRecord(s *scenario) (map[string]contractExchange, error) {
	p := filepath.Join(s.inv.OutDir, "contract.json")
	b, err := subfile.Read(p, "{out}/contract.json", subfile.ContractJSON)
	if errors.Is(err, os.ErrNotExist) {
		return nil, failf("the contract command wrote no {out}/contract.json")
	}
	if err != nil {
		return nil, failf("the contract command's %v", err)
	}
	s.addEvidence(filepath.Join(s.inv.RelDir, "out", "contract.json"))
	var rec struct {
		Exchanges []contractExchange `json:"exchanges"`
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, failf("contract.json is not the documented record: %v", err)
	}
	out := map[string]contractExchange{}
	for _, ex := range rec.Exchanges {
		if _, dup := out[ex.Step]; !dup {
			out[ex.Step] = ex
		}
	}
	return out, nil
}

func contractRecordShape(ctx context.Context) error {
	s := state(ctx)
	rec, err := contractRecord(s)
	if err != nil {
		return err
	}
	var problems []string
	for _, want := range contractSteps {
		ex, ok := rec[want.step]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("no %q exchange", want.step))
		case !strings.EqualFold(ex.Method, want.method):
			problems = append(problems, fmt.Sprintf("%s was sent as %s, want %s", want.step, ex.Method, want.method))
		case ex.Status != want.status:
			problems = append(problems, fmt.Sprintf("%s recorded %d, want %d", want.step, ex.Status, want.status))
		}
	}
	if cr, ok := rec["create"]; ok {
		for _, f := range []string{"id", "status.state", "createdAt"} {
			if v, _ := cr.Fields[f].(string); v == "" {
				problems = append(problems, "create's record lacks the key field "+f)
			}
		}
	}
	if ep, ok := rec["endpoint"]; ok {
		v, _ := ep.Fields["endpoint"].(string)
		switch {
		case v == "":
			problems = append(problems, "endpoint's record lacks the endpoint it resolved")
		case strings.Contains(v, "://"):
			problems = append(problems, fmt.Sprintf("the recorded endpoint %q carries a scheme", v))
		}
	}
	if un, ok := rec["unauthorized"]; ok {
		if v, _ := un.Fields["code"].(string); v != "MISSING_API_KEY" {
			problems = append(problems, fmt.Sprintf("unauthorized recorded code %q, want MISSING_API_KEY", v))
		}
	}
	if len(problems) > 0 {
		return failf("the submission's contract record: %s", strings.Join(problems, "; "))
	}
	return nil
}

func contractMatchesServer(ctx context.Context) error {
	s := state(ctx)
	rec, err := contractRecord(s)
	if err != nil {
		return err
	}
	saw, err := s.inv.Saw(ctx)
	if err != nil {
		return harnessf("reading what the server saw: %v", err)
	}
	s.addEvidence(filepath.Join(s.inv.RelDir, "server-saw.json"))
	id, _ := rec["create"].Fields["id"].(string)
	createdByIt := false
	for _, c := range saw.Created {
		createdByIt = createdByIt || c == id
	}
	if id == "" || !createdByIt {
		return failf("the record's create names sandbox %q, but the server saw the contract command's key create %v", id, saw.Created)
	}
	var problems []string
	for _, want := range contractSteps {
		ex := rec[want.step]
		pool := saw.Calls
		if want.step == "unauthorized" {
			pool = saw.Keyless
		}
		if !sawExchange(pool, ex) {
			who := "with the contract command's key"
			if want.step == "unauthorized" {
				who = "without a key while the contract command ran"
			}
			problems = append(problems, fmt.Sprintf("%s %s → %d was not seen by the server %s", ex.Method, ex.Path, ex.Status, who))
		}
	}
	if len(problems) > 0 {
		return failf("the record does not match the server: %s", strings.Join(problems, "; "))
	}
	s.note("the server saw each of the 5 recorded exchanges from the contract command (sandbox %s)", id)
	return nil
}

// sawExchange reports whether the server saw the recorded exchange: same
// method, same path (with or without /v1, without the query), same status.
func sawExchange(pool []wire.Event, ex contractExchange) bool {
	want := normPath(ex.Path)
	for _, ev := range pool {
		lc := ev.Lifecycle
		if lc != nil && strings.EqualFold(lc.Method, ex.Method) && normPath(lc.Path) == want && lc.Status == ex.Status {
			return true
		}
	}
	return false
}

func normPath(p string) string {
	if u, err := url.Parse(p); err == nil && u.Path != "" {
		p = u.Path
	}
	p = strings.TrimSuffix(p, "/")
	return strings.TrimPrefix(p, "/v1")
}

// bestEffortDelete removes a sandbox the harness created, whatever state the scenario is in.
func (e *Env) bestEffortDelete(ctx context.Context, id string) {
	c, cancel := ctxTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _ = e.client.DeleteSandbox(c, id)
}

func excerpt(b []byte, n int) string {
	s := string(b)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
