package steps

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/harness/summary"
)

// TestAllowedLookups reads the hosts an egress sidecar's log shows allowed
// after the deny: lines "<engine timestamp> <JSON>", egress.outbound events
// without error only.
func TestAllowedLookups(t *testing.T) {
	since := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	log := `2026-12-01T18:59:59.000000000Z {"level":"info","opensandbox.event":"egress.outbound","target.host":"pypi.org","target.ips":["1.2.3.4"]}
2026-12-01T19:00:01.000000000Z {"level":"info","opensandbox.event":"egress.outbound","target.host":"files.pythonhosted.org","target.ips":["1.2.3.5"]}
2026-12-01T19:00:02.000000000Z {"level":"info","opensandbox.event":"egress.outbound","target.host":"data-api.capstone.test","error":"read udp: i/o timeout"}
2026-12-01T19:00:03.000000000Z {"level":"info","opensandbox.event":"egress.updated","target.host":"pypi.org"}
2026-12-01T19:00:04.000000000Z policy server listening on :18080
garbage {"opensandbox.event":"egress.outbound","target.host":"unknown.time"}
`
	got := allowedLookups(log, since)
	want := []string{"files.pythonhosted.org", "unknown.time"}
	if !slices.Equal(got, want) {
		t.Errorf("allowedLookups = %v, want %v", got, want)
	}
}

// TestD1RealTargetPreconditions: on a real target D1's checks run only when
// the deny through the sidecar's policy API took effect before the
// subject's first install command (seen by the recording proxy) and the
// install needed the index; otherwise the drill is not measured, saying why.
func TestD1RealTargetPreconditions(t *testing.T) {
	e, _ := blameEnv(t, core.Target{Kind: rubric.TargetReal, Domain: "127.0.0.1:9", APIKey: "k-platform"})
	start := time.Now().Add(-time.Minute)
	exit1, exit0 := 1, 0
	install := "python3 -m pip install -q --index-url https://pypi.org/simple tabulate"
	mk := func(deny *policyDeny, installAt time.Duration, installExit *int) context.Context {
		s := &scenario{env: e, name: "D1", tags: []string{"@drill:D1"}, ids: []string{"D1"}, drill: &drill{Name: "egress-deny-package-index"}}
		r := &subjectRun{key: "d1", launch: launch{Started: start, Res: &subject.Result{ExitCode: 1, Duration: 20 * time.Second}}, policyDeny: deny}
		r.Observed = []observe.Call{
			{Time: start.Add(time.Second), Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "sb-1"},
			{Time: start.Add(installAt), Kind: observe.KindEndpoint, Method: "POST", Path: "/sandboxes/sb-1/proxy/44772/command", Status: 200, SandboxID: "sb-1", Port: 44772, Command: install},
		}
		r.sum = &summary.Summary{Steps: []summary.Step{{Name: "install", Command: install, ExitCode: installExit}}}
		s.run = r
		return context.WithValue(context.Background(), scenarioKey{}, s)
	}
	applied := &policyDeny{sandboxID: "sb-1", requested: start.Add(2 * time.Second), applied: start.Add(2100 * time.Millisecond), patch: "PATCH /policy → 200"}
	notMeasuredAs := func(err error, cat, reason string) {
		t.Helper()
		var nm *notMeasuredError
		require.True(t, errors.As(err, &nm), "not measured: %v", err)
		assert.Equal(t, cat, nm.Category)
		assert.Contains(t, nm.Reason, reason)
	}
	s := func(ctx context.Context) (*scenario, *subjectRun) { sc := state(ctx); return sc, sc.run }

	ctx := mk(applied, 5*time.Second, &exit1)
	sc, r := s(ctx)
	assert.NoError(t, reachedForIndexReal(ctx, sc, r), "deny before the install, the install failed: measured")

	ctx = mk(applied, 1500*time.Millisecond, &exit1)
	sc, r = s(ctx)
	notMeasuredAs(reachedForIndexReal(ctx, sc, r), string(rubric.CategoryPreconditionUnmet), "before the deny took effect")

	ctx = mk(applied, 5*time.Second, &exit0)
	sc, r = s(ctx)
	notMeasuredAs(reachedForIndexReal(ctx, sc, r), string(rubric.CategoryUnsupportedByTarget), "succeeded without the package index")

	ctx = mk(&policyDeny{sandboxID: "sb-1", absent: true, why: "the egress sidecar of sandbox sb-1 has no runtime policy API: PATCH /policy answered 404 (not found)"}, 5*time.Second, &exit1)
	sc, r = s(ctx)
	notMeasuredAs(reachedForIndexReal(ctx, sc, r), string(rubric.CategoryUnsupportedByTarget), "has no runtime policy API")

	ctx = mk(nil, 5*time.Second, &exit1)
	sc, r = s(ctx)
	notMeasuredAs(reachedForIndexReal(ctx, sc, r), string(rubric.CategoryPreconditionUnmet), "no create of the subject was seen")

	// Three install commands after the deny: at most 3 passes, at most 2 fails.
	ctx = mk(applied, 5*time.Second, &exit1)
	sc, r = s(ctx)
	r.Observed = append(r.Observed, r.Observed[1], r.Observed[1])
	r.Observed[2].Time, r.Observed[3].Time = start.Add(6*time.Second), start.Add(7*time.Second)
	assert.NoError(t, installAttemptsReal(ctx, sc, r, 3))
	assert.Error(t, installAttemptsReal(ctx, sc, r, 2))
}
