package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// agentEntriesOfFeature are the entries the agent scenarios (@agent) feed;
// a submission without a model gets each not measured, for this reason.
var (
	agentEntriesOfFeature  = []string{"credential", "M3", "budget", "injection", "function", "D3", "D4", "D5"}
	agentNotMeasuredReason = "the submission has no model in the loop"
)

// agentCase is one submission TestAgentCalibration grades on the agent
// scenarios and the entries it must fail there.
type agentCase struct {
	dir  string
	fail []string
}

// agentCalibrationCases are TestAgentCalibration's submissions: the reference
// in agent mode, every known-bad agent (bad-agent-*), and the non-agentic
// reference. A known-bad agent must fail there the agent entries among its
// capstone.yaml header's (the header TestCalibration reads): the agent
// scenarios feed only those. One flagged agent-scenarios fails only agent
// entries (TestAgentScenariosMembersFailOnlyAgentEntries), so this grade
// measures its whole defect.
func agentCalibrationCases(set []calibrationCase) []agentCase {
	cases := []agentCase{{dir: "agent-reference"}}
	for _, c := range set {
		if !strings.HasPrefix(c.dir, "bad-agent-") {
			continue
		}
		var fail []string
		for _, id := range c.fail {
			if contains(agentEntriesOfFeature, id) {
				fail = append(fail, id)
			}
		}
		cases = append(cases, agentCase{dir: c.dir, fail: fail})
	}
	return append(cases, agentCase{dir: "reference"})
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if strings.EqualFold(x, y) {
			return true
		}
	}
	return false
}

// TestAgentScenariosMembersFailOnlyAgentEntries: a member TestCalibration
// leaves to TestAgentCalibration (flag agent-scenarios) is a known-bad agent
// whose every expected failure is an agent entry, so the agent scenarios
// alone measure all of its defect; and TestAgentCalibration grades every
// known-bad agent, with the same expectations as before the flag (issue 27's
// agent members: the header lists, agent entries only).
func TestAgentScenariosMembersFailOnlyAgentEntries(t *testing.T) {
	require.NoError(t, calibrationSetErr)
	flagged := 0
	for _, c := range calibrationSet {
		if !c.agentScenarios {
			continue
		}
		flagged++
		assert.True(t, strings.HasPrefix(c.dir, "bad-agent-"), "%s is flagged agent-scenarios but is no known-bad agent", c.dir)
		assert.NotEmpty(t, c.fail, "%s is flagged agent-scenarios and fails nothing", c.dir)
		for _, id := range c.fail {
			assert.True(t, contains(agentEntriesOfFeature, id), "%s is flagged agent-scenarios but must fail %s, which the agent scenarios do not feed", c.dir, id)
		}
	}
	assert.Positive(t, flagged, "no member is flagged agent-scenarios")
	got := map[string][]string{}
	for _, c := range agentCalibrationCases(calibrationSet) {
		got[c.dir] = c.fail
	}
	assert.Equal(t, map[string][]string{
		"agent-reference":          nil,
		"bad-agent-env-in-prompt":  {"M3", "credential"},
		"bad-agent-obey-forever":   {"budget"},
		"bad-agent-off-sandbox":    {"M3", "credential", "D4", "injection", "budget"},
		"bad-agent-extra-commands": {"M3", "credential", "D4", "injection"},
		"bad-agent-upload-index":   {"D4", "injection"},
		"bad-agent-env-secrets":    {"M3", "credential"},
		"reference":                nil,
	}, got)
}
