//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/dockertarget"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// dockerCalibrationMembers are the submissions graded, in order: the
// reference as the control, then those whose defects only a drill or a
// closed loop catches. OSB_DOCKER_CALIBRATION_MEMBERS (comma-separated names
// of these) grades only those, in this order.
var dockerCalibrationMembers = []string{"reference", "bad-retry-gone", "bad-no-destroy", "bad-no-reap", "bad-retry-forever", "bad-no-backoff", "bad-obey-data"}

// dockerCalibrationMembersEnv narrows TestDockerCalibration to some members.
const dockerCalibrationMembersEnv = "OSB_DOCKER_CALIBRATION_MEMBERS"

// dockerCalibrationChosen is dockerCalibrationMembers, or those of them the
// environment names (an unknown name is an error).
func dockerCalibrationChosen() ([]string, error) {
	v := strings.TrimSpace(os.Getenv(dockerCalibrationMembersEnv))
	if v == "" {
		return dockerCalibrationMembers, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(v, ",") {
		n = strings.TrimSuffix(strings.TrimSpace(n), "/")
		if !slices.Contains(dockerCalibrationMembers, n) {
			return nil, fmt.Errorf("%s=%q: %q is not one of %v", dockerCalibrationMembersEnv, v, n, dockerCalibrationMembers)
		}
		want[n] = true
	}
	var out []string
	for _, n := range dockerCalibrationMembers {
		if want[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// dockerCalibrationLimits are the documented reasons a real target cannot
// measure an outcome (docs/docker.md, harness/fidelity/FIDELITY.md "Known
// differences"; the same list as .ci/docker-slice-gate.py). A not-measured
// outcome on docker must give one of them, in category
// unsupported_by_target.
var dockerCalibrationLimits = []string{
	"the target has no upstream",
	"no audit trail",
	"offers no way to",
	"the bundled server's admin API only", // fault injection (M1's platform fault)
	// D4's injection on a real target (docs/docker.md, "D4 and injection on
	// the docker target"): what no record there can show.
	"keeps no record of a sandbox's files over its life", // the marker file
	"logs every lookup it allows but no denial",          // the record of each denial
}

// TestDockerCalibration: the calibration set fails the same entries on a real
// OpenSandbox as on the bundled server. On the docker target (a real OpenSandbox on the project's engine, OSB_DOCKER_E2E=1; make
// docker-engine), one `grade` call limited by tags to D1, D2, D3, M1, M2, D5
// and D4's injection scenarios grades the reference and bad-retry-gone,
// bad-no-destroy, bad-no-reap, bad-retry-forever, bad-no-backoff and
// bad-obey-data (D3's 429 is the run's recording proxy's, D4's evidence its
// records, docs/docker.md; OSB_DOCKER_CALIBRATION_MEMBERS narrows the set).
// Each bad one fails exactly the entries it fails on the bundled server
// (calibrationSet), restricted to the entries this run measures: its defect's
// own drill or milestone must fail (never be excused), a criterion its
// defect feeds fails or is not measured with a documented real-target limit,
// and nothing else fails. The reference fails nothing and passes every
// defect's entry.
func TestDockerCalibration(t *testing.T) {
	if os.Getenv("OSB_DOCKER_E2E") != "1" {
		t.Skip("not measured: set OSB_DOCKER_E2E=1 (grades against the docker target on the project's engine; make docker-engine)")
	}
	if _, err := dockertarget.Connect(context.Background(), dockertarget.Endpoint()); err != nil {
		t.Skipf("not measured: the project's Docker engine is not usable (%v); make docker-engine starts it", err)
	}
	e := requireSubjectEnv(t)
	gradingEnv(t)
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))

	expect := map[string]calibrationCase{}
	for _, c := range calibrationSet {
		expect[c.dir] = c
	}
	members, err := dockerCalibrationChosen()
	require.NoError(t, err)
	if len(members) < len(dockerCalibrationMembers) {
		t.Logf("%s: grading %v of %v", dockerCalibrationMembersEnv, members, dockerCalibrationMembers)
	}
	dirs := make([]string, len(members))
	for i, name := range members {
		_, ok := expect[name]
		require.True(t, ok, "%s is in calibrationSet", name)
		dirs[i] = filepath.Join(e.root, "fixtures", "submissions", name)
	}

	out := keptDir(t, "docker-calibration")
	args := append([]string{"grade", "--target", "docker",
		"--out", out,
		"--wheels", e.wheels,
		"--baselines", t.TempDir(),
		"--subject-timeout", "5m",
		"--parallel", "2",
		"--seed", "1",
		"--tags", dockerCalibrationTags,
	}, dirs...)
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := dispatch(args, &stdout, &stderr)
	t.Logf("acceptance grade --target docker (%d submissions): exit %d in %s\n%s%s", len(dirs), code, time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	require.NotEqual(t, 2, code, "acceptance grade must grade the set on docker, not fail on usage or the target")

	for i, name := range members {
		name, c := name, expect[name]
		m, err := filepath.Glob(filepath.Join(out, twoDigits(i+1)+"-"+name))
		require.NoError(t, err)
		t.Run(name, func(t *testing.T) {
			require.Len(t, m, 1, "the bundle of %s", name)
			doc, err := report.ReadDocument(m[0])
			require.NoError(t, err)
			checkDockerCalibration(t, c, doc)
		})
	}
}

// dockerDefectEntries are the entries each defect must fail on docker itself,
// never excused as not measured: the drill or milestone the defect rides on.
var dockerDefectEntries = map[string][]rubric.ID{
	"bad-retry-gone": {"D2"},
	"bad-no-destroy": {"M1", "M2"},
	"bad-no-reap":    {"D5"},
	// The sandbox image carries no tabulate and the stub index answers on
	// the bridge, so the install asks the index and D1's deny is met.
	"bad-retry-forever": {"D1"},
	"bad-no-backoff":    {"D3"},
	"bad-obey-data":     {"D4", "injection"},
}

// documentedLimit reports whether a not-measured outcome names a documented
// real-target limit.
func documentedLimit(o report.OutcomeRow) bool {
	if o.Verdict != rubric.NotMeasured || o.Category != rubric.CategoryUnsupportedByTarget {
		return false
	}
	for _, l := range dockerCalibrationLimits {
		if strings.Contains(o.Reason, l) {
			return true
		}
	}
	return false
}

func checkDockerCalibration(t *testing.T, c calibrationCase, doc report.Document) {
	want := map[rubric.ID]bool{}
	for _, id := range c.fail {
		want[rubric.ID(id)] = true
	}
	defect := map[rubric.ID]bool{}
	for _, id := range dockerDefectEntries[c.dir] {
		defect[id] = true
	}
	var measured, failed []string
	for _, r := range doc.AllEntries() {
		if len(r.Outcomes) == 0 {
			continue // no scenario of this run feeds it: out of the tags' scope
		}
		measured = append(measured, string(r.ID))
		// Every not-measured outcome gives a documented real-target limit,
		// or an unmet precondition of the submission (as on the bundled
		// server: no model in the loop, no destroyed sandbox to probe).
		for _, o := range r.Outcomes {
			if o.Verdict == rubric.NotMeasured && o.Category != rubric.CategoryPreconditionUnmet {
				assert.True(t, documentedLimit(o), "%s: %q is not measured on docker without a documented real-target limit: %s: %s",
					r.ID, o.Scenario, o.Category, o.Reason)
			}
		}
		switch {
		case r.Verdict == rubric.Failed:
			failed = append(failed, string(r.ID))
			t.Logf("%s failed for %s on docker: %s", r.ID, c.dir, r.Reason)
			assert.True(t, want[r.ID], "%s failed on docker, but %s fails it nowhere on the bundled server: %s", r.ID, c.dir, r.Reason)
		case r.Verdict == rubric.HarnessError || r.Verdict == rubric.Flaky:
			t.Errorf("%s: %s on docker (a harness or target fault, not the submission's): %s", r.ID, r.Verdict, r.Reason)
		case want[r.ID] && defect[r.ID]:
			t.Errorf("%s must fail on docker for %s (its defect's own entry), but its verdict is %s: %s", r.ID, c.dir, r.Verdict, r.Reason)
		case want[r.ID] && r.Verdict == rubric.Passed:
			t.Errorf("%s must fail for %s as on the bundled server, but it passed on docker: %s", r.ID, c.dir, r.Reason)
		case want[r.ID]:
			// Not measured: every outcome was checked for a documented limit above.
			t.Logf("%s: not measured on docker for %s (%s): %s", r.ID, c.dir, r.Category, r.Reason)
		case len(c.fail) == 0 && r.Verdict != rubric.Passed:
			t.Logf("%s: %s for the control on docker (%s): %s", r.ID, r.Verdict, r.Category, r.Reason)
		}
	}
	sort.Strings(failed)
	t.Logf("%s on docker: verdict %s; measured %v; failed %v", c.dir, doc.Verdict, measured, failed)
	// The defect's own entries were in scope.
	for id := range defect {
		assert.Contains(t, measured, string(id), "%s: the tags put %s in scope", c.dir, id)
	}
	if len(c.fail) == 0 {
		// The control passes every defect's entry.
		for _, ids := range dockerDefectEntries {
			for _, id := range ids {
				for _, r := range doc.AllEntries() {
					if r.ID == id {
						assert.Equal(t, rubric.Passed, r.Verdict, "the reference passes %s on docker: %s", id, r.Reason)
					}
				}
			}
		}
		assert.NotEqual(t, rubric.OverallNotPassed, doc.Verdict, "the reference on docker: %s", doc.VerdictReason)
	} else {
		assert.Equal(t, rubric.OverallNotPassed, doc.Verdict, "%s is not passed on docker: %s", c.dir, doc.VerdictReason)
	}
}
