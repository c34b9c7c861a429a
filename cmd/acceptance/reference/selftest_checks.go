package reference

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/summary"
)

// unitChecks need no server: the pure parts of the pipeline.
func unitChecks() []selfCheck {
	return []selfCheck{
		{"TestSelfClipKeepsHeadAndTail", func(_ context.Context, t *checkT) {
			s, cut := Clip(strings.Repeat("a", 5000)+strings.Repeat("b", 5000), OutputLimit)
			if !cut || len(s) > OutputLimit || !strings.HasPrefix(s, "aaaa") || !strings.HasSuffix(s, "bbbb") {
				t.Errorf("Clip of 10000 bytes to %d: cut=%v len=%d", OutputLimit, cut, len(s))
			}
			if s, cut := Clip("short", 10); cut || s != "short" {
				t.Errorf("Clip changed a short string: %q %v", s, cut)
			}
		}},
		{"TestSelfClassifyPolicyDenial", func(_ context.Context, t *checkT) {
			one := 1
			c := Classify(&one, "ERROR: Could not resolve host: pypi.org", 1, 300)
			if c.Class != summary.ClassNetworkPolicy || c.Retryable {
				t.Errorf("a DNS denial is classified %q (retryable %v), want network_policy, not retryable", c.Class, c.Retryable)
			}
		}},
		{"TestSelfClassifyInputError", func(_ context.Context, t *checkT) {
			three := 3
			c := Classify(&three, "INPUT_ERROR: the CSV file is empty", 1, 300)
			if c.Class != summary.ClassInputError {
				t.Errorf("INPUT_ERROR is classified %q, want input_error", c.Class)
			}
		}},
		{"TestSelfBudgetMaxSteps", func(_ context.Context, t *checkT) {
			b := &Budget{MaxSteps: 2, CommandTimeout: time.Minute, WallClock: time.Hour, Start: time.Now()}
			for i := 0; i < 2; i++ {
				if err := b.BeginStep(time.Now()); err != nil {
					t.Errorf("step %d refused: %v", i+1, err)
				}
			}
			if err := b.BeginStep(time.Now()); err == nil {
				t.Errorf("a third step was allowed with MaxSteps 2")
			}
		}},
		{"TestSelfMetricName", func(_ context.Context, t *checkT) {
			if got := MetricName("Unit Price (€)"); !strings.HasPrefix(got, "unit_price") {
				t.Errorf("MetricName(%q) = %q", "Unit Price (€)", got)
			}
		}},
		{"TestSelfRecomputeHost", func(_ context.Context, t *checkT) {
			dir, err := os.MkdirTemp("", "reference-selftest-")
			if err != nil {
				t.Errorf("temp dir: %v", err)
				return
			}
			defer os.RemoveAll(dir)
			p := filepath.Join(dir, "in.csv")
			if err := os.WriteFile(p, []byte("\xef\xbb\xbfname;qty\n\"a;b\";2\nc;4\n"), 0o644); err != nil {
				t.Errorf("write: %v", err)
				return
			}
			h, err := RecomputeHost(p)
			if err != nil {
				t.Errorf("RecomputeHost: %v", err)
				return
			}
			if h.Rows != 2 || h.Columns != 2 || h.FirstNumeric != "qty" || h.Sum != 6 || h.Mean != 3 {
				t.Errorf("BOM + ';' + quoted delimiter: got rows %d columns %d numeric %q sum %v mean %v, want 2 2 qty 6 3",
					h.Rows, h.Columns, h.FirstNumeric, h.Sum, h.Mean)
			}
		}},
		{"TestSelfRunLabel", func(_ context.Context, t *checkT) {
			if m := runLabel("x", "run-1"); m[RunIDLabel] != "run-1" || m["app"] != "x" {
				t.Errorf("runLabel: %v", m)
			}
			if m := runLabel("x", ""); len(m) != 1 {
				t.Errorf("runLabel without a run id adds a label: %v", m)
			}
		}},
	}
}

// integrationChecks need a server: OPEN_SANDBOX_DOMAIN and OPEN_SANDBOX_API_KEY.
func integrationChecks() []selfCheck {
	return []selfCheck{
		{"TestSelfIntegrationClosedLoop", integrationClosedLoop},
		{"TestSelfIntegrationContract", func(ctx context.Context, t *checkT) {
			cl := serverFromEnv(t)
			rec := RunContract(ctx, cl, "python:3.12", os.Getenv("CAPSTONE_RUN_ID"))
			if len(rec.Exchanges) != len(contractSteps) {
				t.Errorf("%d of %d contract steps ran", len(rec.Exchanges), len(contractSteps))
			}
			for _, ex := range rec.Exchanges {
				if ex.Status != ex.Expected {
					t.Errorf("%s: %s %s answered %d, want %d %s", ex.Step, ex.Method, ex.Path, ex.Status, ex.Expected, ex.Error)
				}
			}
		}},
	}
}

func serverFromEnv(t *checkT) *osb.Client {
	domain, key := os.Getenv("OPEN_SANDBOX_DOMAIN"), os.Getenv("OPEN_SANDBOX_API_KEY")
	if domain == "" || key == "" {
		t.Skip("OPEN_SANDBOX_DOMAIN and OPEN_SANDBOX_API_KEY are not both set: no server to run against")
	}
	cl, err := osb.New(domain, key)
	if err != nil {
		t.Errorf("OPEN_SANDBOX_DOMAIN %q: %v", domain, err)
		panic(errSkip)
	}
	return cl
}

// integrationClosedLoop: create → execute → destroy → 404 on the given server.
func integrationClosedLoop(ctx context.Context, t *checkT) {
	cl := serverFromEnv(t)
	ttl := 300
	res, err := cl.CreateSandbox(ctx, osb.CreateSandboxRequest{
		Image: &osb.ImageSpec{URI: "python:3.12"}, Entrypoint: []string{"tail", "-f", "/dev/null"}, Timeout: &ttl,
		ResourceLimits: map[string]string{"cpu": "1", "memory": "1Gi"},
		NetworkPolicy:  &osb.NetworkPolicy{DefaultAction: "deny"},
		Metadata:       runLabel("capstone-reference-test", os.Getenv("CAPSTONE_RUN_ID")),
	})
	if err != nil || res.Status != 202 {
		t.Errorf("create: %s %v", metaOf(res).StatusLine, err)
		return
	}
	id := res.Value.ID
	deleted := false
	defer func() {
		if !deleted {
			_, _ = cl.DeleteSandbox(context.Background(), id)
		}
	}()
	ep, err := cl.GetEndpoint(ctx, id, osb.DefaultExecdPort, false)
	if err != nil || !ep.OK() {
		t.Errorf("endpoint: %v %v", metaOf(ep).StatusLine, err)
		return
	}
	ex, err := cl.Execd(ep.Value)
	if err != nil {
		t.Errorf("execd %q: %v", ep.Value.Endpoint, err)
		return
	}
	if ok, rd := ex.WaitReady(ctx, 200*time.Millisecond, 30*time.Second); !ok {
		t.Errorf("execd never answered /ping (%d attempts)", rd.Attempts)
		return
	}
	run, err := ex.Run(ctx, osb.CommandRequest{Command: `python3 -c "print(1+1)"`, TimeoutMs: 60000})
	if err != nil || run.Status != 200 {
		t.Errorf("command: %v %v", metaOf(run).StatusLine, err)
		return
	}
	if out := strings.TrimSpace(run.Value.StdoutText()); out != "2" || run.Value.ExitCode == nil || *run.Value.ExitCode != 0 {
		t.Errorf("python3 -c print(1+1): stdout %q exit %s", out, fmtExit(run.Value.ExitCode))
	}
	del, err := cl.DeleteSandbox(ctx, id)
	if err != nil || del.Status != 204 {
		t.Errorf("delete: %s %v", metaOf(del).StatusLine, err)
		return
	}
	deleted = true
	if gone, why := confirmGone(ctx, cl, id); !gone {
		t.Errorf("after delete: %s", why)
	}
}
