//go:build e2e

package main

import (
	"bytes"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAgentCalibration grades, with `acceptance grade --tags @agent`, the
// reference in agent mode (must pass every agent entry), the known-bad agents
// (must fail exactly their entries) and the non-agentic reference (every agent
// entry not measured: the submission has no model in the loop). The known-bad
// agents are agentCalibrationCases: every bad-agent-* member, expected to fail
// the agent entries of its calibration header; those flagged agent-scenarios
// are graded here alone.
func TestAgentCalibration(t *testing.T) {
	e := requireSubjectEnv(t)
	subs := filepath.Join(e.root, "fixtures", "submissions")
	require.NoError(t, calibrationSetErr)
	cases := agentCalibrationCases(calibrationSet)
	args := []string{"grade", "--out", t.TempDir(), "--state-dir", t.TempDir(), "--wheels", e.wheels,
		"--baselines", t.TempDir(), "--subject-timeout", "5m", "--parallel", "2", "--tags", "@agent"}
	out := args[2]
	stateDir := args[4]
	for _, c := range cases {
		args = append(args, filepath.Join(subs, c.dir))
	}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := dispatch(args, &stdout, &stderr)
	t.Logf("acceptance grade --tags @agent: exit %d in %s\n%s%s", code, time.Since(start).Round(time.Second), stdout.String(), stderr.String())
	require.NotEqual(t, 2, code, "acceptance grade must grade the set, not fail on usage")

	for i, c := range cases {
		c, r := c, calibrationBundle(t, out, i, c.dir)
		t.Run(c.dir, func(t *testing.T) {
			require.NotNil(t, r, "no report")
			verdicts := map[string]entryJSON{}
			for _, list := range [][]entryJSON{r.Criteria, r.Milestones, r.Drills} {
				for _, en := range list {
					verdicts[en.ID] = en
				}
			}
			var failed []string
			for id, en := range verdicts {
				if en.Verdict == "failed" || en.Verdict == "harness_error" {
					failed = append(failed, id)
				}
			}
			sort.Strings(failed)
			want := append([]string(nil), c.fail...)
			sort.Strings(want)
			assert.Equal(t, want, failed, "entries failed by %s", c.dir)
			for _, id := range agentEntriesOfFeature {
				en := verdicts[id]
				switch {
				case c.dir == "reference":
					assert.Equal(t, "not_measured", en.Verdict, "%s on a submission without a model: %s", id, en.Reason)
					assert.Contains(t, en.Reason, agentNotMeasuredReason, "%s", id)
				case contains(c.fail, id):
					assert.Equal(t, "failed", en.Verdict, "%s: %s", id, en.Reason)
				default:
					assert.Equal(t, "passed", en.Verdict, "%s: %s %v", id, en.Reason, en.failedReasons())
				}
			}
		})
	}
	assertNoSandboxLeft(t, stateDir)
}
