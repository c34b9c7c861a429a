package upgradecheck

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/compare"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

func TestPlanOrders(t *testing.T) {
	assert.Equal(t, "A B B A A B B A", sequence(Plan("0.2.3", "1.1.1", 4, OrderABBA, 1), "0.2.3"))
	assert.Equal(t, "A B", sequence(Plan("0.2.3", "1.1.1", 1, OrderABBA, 1), "0.2.3"))
	r1 := Plan("0.2.3", "1.1.1", 6, OrderRandom, 42)
	assert.Equal(t, r1, Plan("0.2.3", "1.1.1", 6, OrderRandom, 42), "the same seed gives the same order")
	for i := 0; i < len(r1); i += 2 {
		assert.NotEqual(t, r1[i].Version, r1[i+1].Version, "each round runs both versions")
		assert.Equal(t, r1[i].Round, r1[i+1].Round)
	}
	differs := false
	for s := int64(1); s < 20 && !differs; s++ {
		differs = sequence(Plan("a", "b", 6, OrderRandom, s), "a") != sequence(r1, "0.2.3")
	}
	assert.True(t, differs, "the order depends on the seed")
}

// fakeRun writes a finalized-looking bundle: one entry (M0) whose evidence
// carries the noise a real run's does (resource usage, uids, leftover pids,
// a run marker), the images its report names, and one subject run's proxy
// records (create → Running, a command, a DELETE) with the given latencies.
type fakeRun struct {
	execdID, egressID string
	noise             int           // varies the noise fields
	createMs, delMs   int           // latencies the proxy saw
	deleteStatus      int           // 204 unless planted
	deleteShape       string        // "" unless planted
	notFoundCode      string        // the 404's error code
	getShape          string        // the GET answer's shape
	extraHeader       string        // a header only this run's answers carry
	cmdMs             time.Duration // the command's round trip
}

func writeFakeRun(t *testing.T, f fakeRun) string {
	t.Helper()
	dir := t.TempDir()
	ev := filepath.Join(dir, report.EvidenceDir)
	require.NoError(t, os.MkdirAll(filepath.Join(ev, "M0"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(ev, "subject-contract"), 0o755))
	noisy := fmt.Sprintf(`{
  "result": {
    "exit_code": 0,
    "cpu_seconds": 0.00%d,
    "peak_rss_kib": %d,
    "leftover": [
      %d
    ],
    "confinement": {
      "mode": "confined",
      "uid": %d,
      "enforced": [
        "uid %d of its own"
      ],
      "usage": {
        "cpu_seconds": 0.9%d,
        "source": "cgroup v1"
      }
    }
  },
  "groups": {
    "T-1038-cm%016x": 1
  },
  "transcript": "POST /v1/sandboxes 202"
}
`, 5+f.noise, 134528-f.noise*1000, 17975+f.noise, 610643+f.noise, 610643+f.noise, f.noise, 0xdd7347809d7b8ed4+uint64(f.noise))
	require.NoError(t, os.WriteFile(filepath.Join(ev, "M0", "transcript.json"), []byte(noisy), 0o644))
	doc := map[string]any{"schema_version": report.SchemaVersion, "verdict": "passed", "score": map[string]any{"earned": 5, "measured": 5},
		"versions": map[string]string{
			"rubric":                               "r1",
			"component: execd image x/execd:1":     f.execdID + " (stand-in)",
			"component: egress image x/egress:1":   f.egressID + " (stand-in)",
			"component: sandbox image python:3.12": "sha256:sb (stand-in)",
			"component: control plane":             "opensandbox-server==x (official)",
		},
		"criteria": []any{}, "drills": []any{},
		"milestones": []any{map[string]any{"id": "M0", "verdict": rubric.Passed, "evidence": []string{"evidence/M0/transcript.json"}}}}
	b, _ := json.Marshal(doc)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644))

	t0 := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC).Add(time.Duration(f.noise) * time.Minute)
	id := fmt.Sprintf("3914c4ff-0000-4000-8000-%012d", f.noise)
	hdr := []string{"Content-Type", "Server"}
	if f.extraHeader != "" {
		hdr = append(hdr, f.extraHeader)
	}
	call := func(at time.Duration, dur time.Duration, method, path string, status int, state, shape, code string) map[string]any {
		return map[string]any{"time": t0.Add(at), "ended": t0.Add(at + dur), "method": method, "path": path, "status": status,
			"sandbox_id": id, "state": state, "shape": shape, "error_code": code, "headers": hdr}
	}
	del := f.deleteStatus
	if del == 0 {
		del = 204
	}
	getShape := f.getShape
	if getShape == "" {
		getShape = "{id:string,status:{state:string}}"
	}
	life := []map[string]any{
		call(0, time.Duration(f.createMs)*time.Millisecond, "POST", "/v1/sandboxes", 202, "Running", "{id:string,status:{state:string}}", ""),
		call(20*time.Second, 30*time.Millisecond, "GET", "/v1/sandboxes/"+id, 200, "Running", getShape, ""),
		call(40*time.Second, time.Duration(f.delMs)*time.Millisecond, "DELETE", "/v1/sandboxes/"+id, del, "", f.deleteShape, ""),
		call(50*time.Second, 10*time.Millisecond, "GET", "/v1/sandboxes/"+id, 404, "", "{code:string,message:string}", f.notFoundCode),
	}
	life[0]["path"] = "/v1/sandboxes"
	b, _ = json.Marshal(life)
	require.NoError(t, os.WriteFile(filepath.Join(ev, "subject-contract", "proxy-lifecycle.json"), b, 0o644))
	ep := []map[string]any{{"time": t0.Add(25 * time.Second), "ended": t0.Add(25*time.Second + f.cmdMs), "kind": "endpoint", "method": "POST",
		"path": "/sandboxes/" + id + "/proxy/44772/command", "status": 200, "sandbox_id": id, "port": 44772, "headers": []string{"Content-Type"}}}
	b, _ = json.Marshal(ep)
	require.NoError(t, os.WriteFile(filepath.Join(ev, "subject-contract", "endpoint-calls.json"), b, 0o644))
	return dir
}

func base(noise, createMs int) fakeRun {
	return fakeRun{execdID: "sha256:execd-standin", egressID: "sha256:egress-standin", noise: noise, createMs: createMs, delMs: 900,
		notFoundCode: "SANDBOX::NOT_FOUND", cmdMs: 1200 * time.Millisecond}
}

func judged(t *testing.T, from, to []string) upgradeResult {
	t.Helper()
	r := upgradeResult{From: "0.2.3", To: "1.1.1", Rounds: len(from), Order: OrderABBA, Sequence: "A B B A"}
	for i, d := range from {
		r.Runs = append(r.Runs, upgradeRun{Version: "0.2.3", Round: i + 1, Dir: d})
	}
	for i, d := range to {
		r.Runs = append(r.Runs, upgradeRun{Version: "1.1.1", Round: i + 1, Dir: d})
	}
	r.judge(compare.DefaultOptions)
	return r
}

// TestUnchangedPairShowsNothing: two versions whose answers are the same,
// runs differing only in noise (resource usage, uids, pids, run markers,
// timings): no evidence drift, no contract change, and the control-plane
// latencies from the proxy are judged within the noise. Both sides ran the
// same stand-ins: the check says it compared control planes only.
func TestUnchangedPairShowsNothing(t *testing.T) {
	from := []string{writeFakeRun(t, base(1, 1200)), writeFakeRun(t, base(2, 1500))}
	to := []string{writeFakeRun(t, base(3, 1300)), writeFakeRun(t, base(4, 1400))}
	r := judged(t, from, to)
	assert.Empty(t, r.Drift, "noise is not drift")
	assert.Empty(t, r.DriftInVersion)
	assert.Empty(t, r.Contract, "nothing in the contract changed")
	assert.Empty(t, r.Regressions)
	assert.Equal(t, 0, r.Exit)
	figs := map[string]FigureJudgement{}
	for _, f := range r.Figures {
		figs[f.Name] = f
	}
	cr := figs[compare.FigureCreateReady]
	require.True(t, cr.Judged, "%+v", r.Figures)
	assert.Equal(t, 1350.0, cr.FromMedian)
	assert.Equal(t, 300.0, cr.FromSpread)
	assert.True(t, cr.WithinTheNoise)
	assert.Equal(t, 900.0, figs[compare.FigureDelete].ToMedian)
	assert.Equal(t, 1200.0, figs[compare.FigureCommand].FromMedian)
	assert.True(t, r.DataPlane.ControlPlaneOnly)
	md := r.markdown()
	assert.Contains(t, md, "**control plane only**")
	assert.Contains(t, md, "Evidence: no drift")
	assert.Contains(t, md, "Contract: no change")
	assert.Contains(t, md, "judged ABBA")
	assert.Contains(t, md, "| "+compare.FigureCreateReady+" | 1350 [300] | 1350 [100] | within the noise |")
}

// TestPlantedContractChangeIsReported: the new version answers DELETE with
// 200 and a body instead of 204, drops a key from GET's answer, renames
// the 404's error code and adds a header: each is a contract change. A
// create 2 s slower in every run, beyond the spread, is a regression.
// Each side ran its own execd and egress.
func TestPlantedContractChangeIsReported(t *testing.T) {
	from := []string{writeFakeRun(t, base(1, 1200)), writeFakeRun(t, base(2, 1300))}
	planted := func(noise, createMs int) fakeRun {
		f := base(noise, createMs)
		f.execdID, f.egressID = "sha256:execd-v1.1.0", "sha256:egress-v1.1.7"
		f.deleteStatus, f.deleteShape = 200, "{deleted:bool}"
		f.getShape = "{id:string}"
		f.notFoundCode = "NOT_FOUND"
		f.extraHeader = "X-Opensandbox-Version"
		return f
	}
	to := []string{writeFakeRun(t, planted(3, 3300)), writeFakeRun(t, planted(4, 3250))}
	r := judged(t, from, to)
	facts := map[string]string{}
	for _, c := range r.Contract {
		facts[c.Fact] = c.Side
	}
	assert.Equal(t, "old", facts["DELETE /sandboxes/{id} → 204"])
	assert.Equal(t, "new", facts["DELETE /sandboxes/{id} → 200"])
	assert.Equal(t, "new", facts["DELETE /sandboxes/{id} → 200 body {deleted:bool}"])
	assert.Equal(t, "old", facts["GET /sandboxes/{id} → 200 body {id:string,status:{state:string}}"])
	assert.Equal(t, "new", facts["GET /sandboxes/{id} → 200 body {id:string}"])
	assert.Equal(t, "old", facts["GET /sandboxes/{id} → 404 error code SANDBOX::NOT_FOUND"])
	assert.Equal(t, "new", facts["GET /sandboxes/{id} → 404 error code NOT_FOUND"])
	assert.Equal(t, "new", facts["POST /sandboxes → 202 header X-Opensandbox-Version"])
	for f := range facts {
		assert.NotContains(t, f, "3914c4ff", "ids never reach a fact")
	}
	assert.NotContains(t, facts, "DELETE /sandboxes/{id} → 200 header Server", "a new status's headers are not listed one by one")
	assert.Len(t, facts, 10, "%v", facts)
	assert.Empty(t, r.Drift, "the planted change is in the contract, not in the noise")
	assert.False(t, r.DataPlane.ControlPlaneOnly)
	assert.Contains(t, r.DataPlane.Note, "each side with its own data plane")
	assert.Contains(t, r.Regressions, fmt.Sprintf("%s median 1250 → 3275 ms (spread 100 / 50)", compare.FigureCreateReady))
	assert.Equal(t, 1, r.Exit)
	md := r.markdown()
	assert.Contains(t, md, "**Contract changes**")
	assert.Contains(t, md, "- only on 1.1.1: `DELETE /sandboxes/{id} → 200 body {deleted:bool}`")
	assert.Contains(t, md, "- only on 0.2.3: `DELETE /sandboxes/{id} → 204`")
	assert.Contains(t, md, "| 1.1.1 | egress x/egress:1 (egress-v1.1., stand-in); execd x/execd:1 (execd-v1.1.0, stand-in) |")
}

// TestContractVariationWithinAVersionIsNotAChange: a fact one run of a
// side shows and another does not is variation, never a change.
func TestContractVariationWithinAVersionIsNotAChange(t *testing.T) {
	a := base(1, 1000)
	b := base(2, 1000)
	b.extraHeader = "X-Sometimes"
	c := base(3, 1000)
	c.extraHeader = "X-Sometimes"
	r := judged(t, []string{writeFakeRun(t, a), writeFakeRun(t, b)}, []string{writeFakeRun(t, c), writeFakeRun(t, base(4, 1000))})
	assert.Empty(t, r.Contract)
	assert.True(t, strings.Contains(r.markdown(), "Contract: no change"))
}
