package report_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
)

const fixtureBundle = "testdata/bundles/m0m5-a"

// commandsBundle is a real bundle of the testdata submission graded on M0
// and D5 (`acceptance grade --tags '@milestone:M0,@drill:D5'`, transcripts,
// home directories and the input copy left out): a passed preflight in
// run.json, the contract and reap commands' invocation.json and
// server-saw.json, and a subject run killed mid-run.
const commandsBundle = "testdata/bundles/m0d5-cmds"

// testsBundle is a real bundle of the testdata submission graded on M4
// (`acceptance grade --tags @milestone:M4`; home directories, transcripts,
// the input copy and the subject's chart and report left out): the
// submission's test.unit and test.integration commands with their
// invocation.json and server-saw.json (the integration test creates and
// deletes a sandbox with its key), and the sales subject run.
const testsBundle = "testdata/bundles/m4-tests"

// copyBundle copies a fixture bundle into a fresh directory.
var copyBundle = reporttest.CopyBundle

// The test commands' timelines, from a real M4 run: the unit test made no
// call; the integration test created a sandbox with the command's key and
// deleted it, and the server saw both calls.
func TestReadInvocationsTestCommands(t *testing.T) {
	t.Parallel()
	invs, err := report.ReadInvocations(testsBundle)
	require.NoError(t, err)
	require.Len(t, invs, 2)
	unit, integ := invs[0], invs[1]
	assert.Equal(t, "test.unit", unit.Field)
	assert.Equal(t, "python3 -m unittest discover -s tests/unit -v", unit.Command)
	assert.Equal(t, "evidence/subject-test.unit", unit.Dir)
	assert.Equal(t, 0, unit.ExitCode)
	assert.True(t, unit.HasAudit)
	assert.Equal(t, 0, unit.Calls)
	assert.Empty(t, unit.Sandboxes)

	assert.Equal(t, "test.integration", integ.Field)
	assert.Equal(t, "python3 -m unittest discover -s tests/integration -v", integ.Command)
	assert.True(t, integ.Start.After(unit.End) || integ.Start.Equal(unit.End), "the integration test runs after the unit test")
	assert.Equal(t, 0, integ.ExitCode)
	assert.True(t, integ.HasAudit)
	assert.Equal(t, 2, integ.Calls)
	require.Len(t, integ.Sandboxes, 1)
	sb := integ.Sandboxes[0]
	assert.True(t, strings.HasPrefix(sb.ID, "8c5af3c3"))
	assert.False(t, sb.Created.Before(integ.Start), "created while the command ran")
	assert.True(t, sb.Deleted.After(sb.Created))
	assert.False(t, sb.Deleted.After(integ.End), "deleted before the command ended")
	var labels []string
	for _, m := range integ.Markers {
		labels = append(labels, m.Kind+": "+m.Label)
	}
	assert.Equal(t, []string{"call: POST /v1/sandboxes → 202", "call: DELETE /v1/sandboxes/8c5af3c3 → 204"}, labels)

	runs, err := report.ReadRuns(testsBundle)
	require.NoError(t, err)
	require.Len(t, runs, 1, "the test commands are not subject runs")
	assert.Equal(t, "sales", runs[0].Key)
}

// The contract and reap commands' timelines: what the server saw from each
// command's own key (and keyless calls while the contract check ran), the
// sandboxes they created or deleted, in start order.
func TestReadInvocations(t *testing.T) {
	t.Parallel()
	invs, err := report.ReadInvocations(commandsBundle)
	require.NoError(t, err)
	require.Len(t, invs, 2)
	reap, contract := invs[0], invs[1]
	assert.Equal(t, "reap", reap.Field, "the reap ran first in this run")
	assert.Equal(t, "python3 reap.py", reap.Command)
	assert.Equal(t, "20261130T181026Z-25b0fe-sales-sigkill-mid-run", reap.RunID, "reap gets the killed run's id")
	assert.Equal(t, "contract", contract.Field)
	assert.Equal(t, "contract", contract.Key)
	assert.Equal(t, "evidence/subject-contract", contract.Dir)
	assert.Equal(t, "python3 contract.py --out {out}", contract.Command)
	assert.False(t, contract.Start.IsZero())
	assert.True(t, contract.End.After(contract.Start))
	assert.Equal(t, 0, contract.ExitCode)
	assert.True(t, contract.HasAudit)

	require.Len(t, contract.Sandboxes, 1)
	sb := contract.Sandboxes[0]
	assert.True(t, strings.HasPrefix(sb.ID, "373b36f4"))
	assert.False(t, sb.Created.IsZero())
	assert.True(t, sb.Deleted.After(sb.Created))
	assert.False(t, sb.Gone404.Before(sb.Deleted))
	assert.Equal(t, 5, contract.Calls)
	var labels []string
	for _, m := range contract.Markers {
		labels = append(labels, m.Kind+": "+m.Label)
	}
	assert.Equal(t, []string{
		"call: POST /v1/sandboxes → 202",
		"call: GET /v1/sandboxes/373b36f4/endpoints/44772 → 200",
		"call: without a key: POST /v1/sandboxes → 401",
		"call: DELETE /v1/sandboxes/373b36f4 → 204",
		"call: GET /v1/sandboxes/373b36f4 → 404",
	}, labels)

	// The reap deleted the killed run's sandbox: created before it ran.
	require.Len(t, reap.Sandboxes, 1)
	assert.True(t, reap.Sandboxes[0].Created.IsZero())
	assert.False(t, reap.Sandboxes[0].Deleted.IsZero())
	assert.Equal(t, 2, reap.Calls)

	// Subject runs are not commands, and commands are not subject runs.
	runs, err := report.ReadRuns(commandsBundle)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	assert.Equal(t, "sales-sigkill-mid-run", runs[0].Key)
	assert.Empty(t, runs[0].Field)
}

// A command that made many calls shows the first ones and says how many
// more server-saw.json holds; a command with no server-saw.json still shows
// its process.
func TestReadInvocationsManyCalls(t *testing.T) {
	t.Parallel()
	dir := copyBundle(t, commandsBundle)
	saw := filepath.Join(dir, "evidence", "subject-contract", "server-saw.json")
	var m map[string][]map[string]any
	require.NoError(t, json.Unmarshal(reporttest.MustRead(t, saw), &m))
	base := m["calls_with_its_key"][0]
	for i := 0; i < 30; i++ {
		c := map[string]any{}
		for k, v := range base {
			c[k] = v
		}
		c["seq"] = 1000 + i
		m["calls_with_its_key"] = append(m["calls_with_its_key"], c)
	}
	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(saw, b, 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "evidence", "subject-reap", "server-saw.json")))
	invs, err := report.ReadInvocations(dir)
	require.NoError(t, err)
	require.Len(t, invs, 2)
	contract := invs[1]
	assert.Equal(t, 35, contract.Calls)
	assert.Len(t, contract.Markers, report.MaxCallMarkers+1)
	assert.Equal(t, "… and 19 more calls (server-saw.json)", contract.Markers[len(contract.Markers)-1].Label)
	reap := invs[0]
	assert.False(t, reap.HasAudit)
	assert.Empty(t, reap.Sandboxes)
	var buf bytes.Buffer
	require.NoError(t, render.WriteHTML(&buf, report.Scored(report.Document{Invocations: invs})))
	assert.Contains(t, buf.String(), `id="cmd-reap"`)
	assert.NotContains(t, buf.String(), "evidence/subject-reap/server-saw.json", "no link to a file that is not there")
}

func TestReadRunsTimeline(t *testing.T) {
	t.Parallel()
	runs, err := report.ReadRuns(fixtureBundle)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	r := runs[0]
	assert.Equal(t, "sales", r.Key)
	require.Len(t, r.Sandboxes, 1)
	sb := r.Sandboxes[0]
	assert.False(t, sb.Created.IsZero())
	assert.True(t, sb.Deleted.After(sb.Created))
	assert.False(t, sb.Gone404.Before(sb.Deleted), "the 404 comes after the delete")
	require.Len(t, r.Steps, 2)
	assert.Equal(t, "install", r.Steps[0].Name, "step names come from summary.json")
	assert.Equal(t, "analyze", r.Steps[1].Name)
	require.NotNil(t, r.Steps[1].ExitCode)
	assert.Equal(t, 0, *r.Steps[1].ExitCode)
	assert.True(t, strings.HasPrefix(r.Thumbnail, "data:image/png;base64,"))
	assert.Less(t, len(r.Thumbnail), 70<<10, "a thumbnail, not the chart")
}

func TestTimelineFaultMarkers(t *testing.T) {
	t.Parallel()
	dir := copyBundle(t, fixtureBundle)
	audit := filepath.Join(dir, "evidence", "subject-sales", "audit.json")
	b, err := os.ReadFile(audit)
	require.NoError(t, err)
	// Plant a fault-driven denial and an expiry, as drills D1 and D2 produce.
	extra := `,{"seq":100,"time":"2026-11-30T15:08:48.000Z","sandbox_id":"x","kind":"egress","egress":{"phase":"dns","host":"pypi.org","decision":"deny","rule":"override:pypi.org"}},` +
		`{"seq":101,"time":"2026-11-30T15:08:49.000Z","sandbox_id":"53811602-9961-43a5-bc02-d3a0dcdd99ef","kind":"state","state":{"from":"Running","to":"Expired","reason":"expired by the admin API"}}]`
	b = append(bytes.TrimRight(bytes.TrimSpace(b), "]"), []byte(extra)...)
	require.NoError(t, os.WriteFile(audit, b, 0o644))
	// Refused creates (drill D3's 429s) are in lifecycle-calls.json only; on
	// a real target the recording proxy's say who injected them.
	calls := `[{"seq":1,"time":"2026-11-30T15:08:46.7Z","kind":"lifecycle","lifecycle":{"method":"POST","path":"/v1/sandboxes","status":429}},` +
		`{"seq":2,"time":"2026-11-30T15:08:48.8Z","kind":"lifecycle","lifecycle":{"method":"POST","path":"/v1/sandboxes","status":429}},` +
		`{"seq":0,"time":"2026-11-30T15:08:50.8Z","kind":"lifecycle","lifecycle":{"method":"POST","path":"/v1/sandboxes","status":429},"fault":{"name":"injected-by-recording-proxy","active":true,"detail":"429 injected by the harness's recording proxy (OpenSandbox's docker runtime has no pools)"}}]`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "evidence", "subject-sales", "lifecycle-calls.json"), []byte(calls), 0o644))
	runs, err := report.ReadRuns(dir)
	require.NoError(t, err)
	var labels []string
	for _, m := range runs[0].Markers {
		labels = append(labels, m.Kind+": "+m.Label)
	}
	assert.Contains(t, labels, "fault: egress denied by a simulated fault: pypi.org")
	assert.Contains(t, labels, "fault: sandbox Expired: expired by the admin API")
	assert.Contains(t, labels, "fault: create attempt answered 429 (1)")
	assert.Contains(t, labels, "fault: create attempt answered 429 (2)")
	assert.Contains(t, labels, "fault: create attempt answered 429 (3): 429 injected by the harness's recording proxy (OpenSandbox's docker runtime has no pools)")
	assert.Equal(t, "audit", runs[0].StepsFrom)

	// Without an audit the steps are the subject's own account.
	require.NoError(t, os.Remove(audit))
	runs, err = report.ReadRuns(dir)
	require.NoError(t, err)
	assert.Equal(t, "summary", runs[0].StepsFrom)
	assert.False(t, runs[0].HasAudit)
	require.Len(t, runs[0].Steps, 2)
	assert.True(t, runs[0].Steps[0].Start.IsZero(), "no start time is invented")
}
