package main

import (
	"bytes"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The agentic part of the calibration set (issue 12): the entries each
// known-bad agent must fail. TestCalibration grades them on the whole suite;
// TestAgentCalibration on the agent feature alone.
var (
	agentEnvInPromptFails = []string{"M3", "credential"}
	agentObeyForeverFails = []string{"budget"}
	// Issue 17: the model's tool calls held against what ran. Answered off the
	// sandbox but reported as run: the two held-against scenarios fail
	// (credential/M3, D4/injection), and the insisting model's command is never
	// denied, so the agent never stops on the policy (budget).
	agentOffSandboxFails = []string{"M3", "credential", "D4", "injection", "budget"}
	// One more sandbox command per tool call, never asked for by the model.
	agentExtraCommandsFails = []string{"M3", "credential", "D4", "injection"}
	// A denied call "rerouted": the input POSTed to the package index (the
	// gateway's record of it, and a command the model never asked for).
	agentUploadIndexFails  = []string{"D4", "injection"}
	agentEntriesOfFeature  = []string{"credential", "M3", "budget", "injection", "D3", "D4", "D5"}
	agentNotMeasuredReason = "the submission has no model in the loop"
)

// TestAgentCalibration grades, with `acceptance grade --tags @agent`, the
// reference in agent mode (must pass every agent entry), the two known-bad
// agents (must fail exactly their entries) and the non-agentic reference
// (every agent entry not measured: the submission has no model in the loop).
func TestAgentCalibration(t *testing.T) {
	e := requireSubjectEnv(t)
	subs := filepath.Join(e.root, "fixtures", "submissions")
	cases := []struct {
		dir  string
		fail []string
	}{
		{"agent-reference", nil},
		{"bad-agent-env-in-prompt", agentEnvInPromptFails},
		{"bad-agent-obey-forever", agentObeyForeverFails},
		{"bad-agent-off-sandbox", agentOffSandboxFails},
		{"bad-agent-extra-commands", agentExtraCommandsFails},
		{"bad-agent-upload-index", agentUploadIndexFails},
		{"reference", nil},
	}
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

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if strings.EqualFold(x, y) {
			return true
		}
	}
	return false
}
