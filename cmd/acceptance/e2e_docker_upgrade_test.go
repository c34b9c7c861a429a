//go:build e2e

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/dockertarget"
	"github.com/osb-capstone/acceptance/harness/report/compare"
)

// TestDockerUpgradeCheck: `upgrade-check --from 0.2.3 --to 1.1.1 --rounds
// 2` on the real docker target, on the one M1 scenario that runs the
// subject once (a sandbox created, a command, a file written and read, a
// DELETE): the runs go ABBA, each side with the images its version names
// (or those OSB_DOCKER_E2E_{FROM,TO}_{EXECD,EGRESS}_IMAGE give it), and
// the report judges the recording proxy's control-plane latencies against
// the spread within each version. Offline both sides run the same
// stand-ins, and the report must say the check covered the control plane
// only. Two runs of one version are an unchanged pair: their evidence,
// noise left out, shows no drift and their answers no contract change.
func TestDockerUpgradeCheck(t *testing.T) {
	if os.Getenv("OSB_DOCKER_E2E") != "1" {
		t.Skip("not measured: set OSB_DOCKER_E2E=1 (runs the upgrade check on the project's engine; make docker-engine)")
	}
	if _, err := dockertarget.Connect(context.Background(), dockertarget.Endpoint()); err != nil {
		t.Skipf("not measured: the project's Docker engine is not usable (%v); make docker-engine starts it", err)
	}
	e := requireSubjectEnv(t)
	gradingEnv(t)
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))

	out := keptDir(t, "docker-upgrade")
	args := []string{"upgrade-check", "--from", "0.2.3", "--to", "1.1.1", "--rounds", "2", "--seed", "1", "--out", out,
		"--tags", "@milestone:M1 && @criterion:isolation",
		"--run-arg=--wheels=" + e.wheels, "--run-arg=--baselines=" + t.TempDir(), "--run-arg=--subject-timeout=2m"}
	given := false
	for _, f := range []string{"from-execd", "from-egress", "to-execd", "to-egress"} {
		env := map[string]string{"from-execd": "OSB_DOCKER_E2E_FROM_EXECD_IMAGE", "from-egress": "OSB_DOCKER_E2E_FROM_EGRESS_IMAGE",
			"to-execd": "OSB_DOCKER_E2E_TO_EXECD_IMAGE", "to-egress": "OSB_DOCKER_E2E_TO_EGRESS_IMAGE"}[f]
		if im := os.Getenv(env); im != "" {
			args = append(args, "--"+f+"-image", im)
			given = true
		}
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := dispatch(args, &stdout, &stderr)
	t.Logf("acceptance upgrade-check: exit %d in %s\n%s", code, time.Since(start).Round(time.Second), stdout.String())
	if code == 2 {
		t.Logf("stderr:\n%s", stderr.String())
	}
	require.NotEqual(t, 2, code, "every run of the check must complete")

	var res struct {
		Sequence  string
		Order     string
		DataPlane struct {
			ControlPlaneOnly bool
			Note             string
		}
		Figures []struct {
			Name           string  `json:"name"`
			Judged         bool    `json:"judged"`
			FromMedian     float64 `json:"from_median"`
			ToMedian       float64 `json:"to_median"`
			FromSpread     float64 `json:"from_spread"`
			ToSpread       float64 `json:"to_spread"`
			WithinTheNoise bool    `json:"within_the_noise"`
			Regression     bool    `json:"regression"`
		}
		Contract []compare.ContractChange
		Runs     []struct {
			Version string `json:"version"`
			Round   int    `json:"round"`
			Dir     string `json:"dir"`
		}
	}
	b, err := os.ReadFile(filepath.Join(out, "upgrade-check.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	assert.Equal(t, "A B B A", res.Sequence)
	require.Len(t, res.Runs, 4)
	assert.Equal(t, []string{"0.2.3", "1.1.1", "1.1.1", "0.2.3"}, []string{res.Runs[0].Version, res.Runs[1].Version, res.Runs[2].Version, res.Runs[3].Version})
	cp := map[string]bool{}
	for _, f := range res.Figures {
		if compare.ControlPlaneFigure(f.Name) {
			cp[f.Name] = true
			assert.True(t, f.Judged, "%s is judged with two runs per side", f.Name)
			assert.Greater(t, f.FromMedian, 0.0, f.Name)
			assert.Greater(t, f.ToMedian, 0.0, f.Name)
			t.Logf("%s: 0.2.3 %.0f [%.0f] ms, 1.1.1 %.0f [%.0f] ms, regression %v", f.Name, f.FromMedian, f.FromSpread, f.ToMedian, f.ToSpread, f.Regression)
		}
	}
	// Create → ready is in every run that created a sandbox; delete and the
	// command round trip only where every run got that far (a run whose
	// command stream the loaded machine left hanging has neither).
	assert.True(t, cp[compare.FigureCreateReady], "control-plane latencies from the proxy: %v", cp)
	if !cp[compare.FigureDelete] || !cp[compare.FigureCommand] {
		t.Logf("delete / command round trip not in every run (a run did not get that far; see the unstable entries): %v", cp)
	}
	assert.Contains(t, stdout.String(), "judged ABBA")
	if !given {
		assert.True(t, res.DataPlane.ControlPlaneOnly, "offline both sides run the stand-ins: %s", res.DataPlane.Note)
		assert.Contains(t, stdout.String(), "**control plane only**")
	} else {
		assert.False(t, res.DataPlane.ControlPlaneOnly, res.DataPlane.Note)
	}
	for _, c := range res.Contract {
		t.Logf("contract change (%s): %s", c.Side, c.Fact)
	}

	// An unchanged pair: the two runs of one version, of a version whose
	// two runs reached the same verdicts (a run the machine's load broke
	// differs in its evidence for that reason, which is not what this
	// checks; the report lists such an entry as unstable).
	var same []string
	for _, v := range []string{"1.1.1", "0.2.3"} {
		var dirs, verdicts []string
		for _, r := range res.Runs {
			if r.Version == v {
				dirs = append(dirs, r.Dir)
				b, err := os.ReadFile(filepath.Join(r.Dir, "report.json"))
				require.NoError(t, err)
				verdicts = append(verdicts, upgradeRunVerdicts(t, b))
			}
		}
		if len(dirs) == 2 && verdicts[0] == verdicts[1] {
			same = dirs
			break
		}
		t.Logf("the two runs of %s reached different verdicts (%v): not an unchanged pair", v, verdicts)
	}
	if len(same) != 2 {
		t.Skip("not measured (the unchanged pair): neither version's two runs reached the same verdicts, the machine disturbed both (the check above listed them as unstable)")
	}
	c, err := compare.Compare(same[0], same[1], compare.Options{Threshold: math.Inf(1), FloorMs: math.Inf(1), FloorBytes: math.Inf(1), IgnoreNoise: true})
	require.NoError(t, err)
	for _, d := range c.Drift {
		t.Errorf("drift between two runs of one version (noise left out): %s\n%s", d.ID, d.Diff)
	}
	assert.Empty(t, compare.ContractChanges([]compare.Contract{compare.ReadContract(same[0])}, []compare.Contract{compare.ReadContract(same[1])}),
		"two runs of one version answer alike")
}

// upgradeRunVerdicts is a report's entry verdicts as one comparable string.
func upgradeRunVerdicts(t *testing.T, reportJSON []byte) string {
	var d struct {
		Criteria, Milestones, Drills []struct {
			ID      string `json:"id"`
			Verdict string `json:"verdict"`
		}
	}
	require.NoError(t, json.Unmarshal(reportJSON, &d))
	var s string
	for _, e := range append(append(d.Criteria, d.Milestones...), d.Drills...) {
		s += e.ID + "=" + e.Verdict + " "
	}
	return s
}
