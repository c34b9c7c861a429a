package render

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// TestFullProvenancePerVerdict: every verdict resting on a sandbox component
// shows the provenance of each component it rests on, official and
// unverified ones too, not only the stand-ins: in report.md, junit.xml
// (per-case properties and output) and Gradescope's results.json.
func TestFullProvenancePerVerdict(t *testing.T) {
	t.Parallel()
	m := reporttest.FixtureMeta()
	m.Target, m.TargetKind = "http://127.0.0.1:8090", rubric.TargetReal
	m.Versions = map[string]string{
		"component: control plane":                          "opensandbox-server==1.1.1 (official)",
		"component: execd image opensandbox/execd:v1.1.0":   "sha256:ecae (official)",
		"component: egress image opensandbox/egress:v1.1.7": "sha256:7ec1 (declares upstream commit 0123456789ab (not verified))",
		"component: sandbox image python:3.12":              "sha256:d29d (stand-in)",
	}
	d, _ := report.Build(rubric.Course, m, reporttest.FixtureOutcomes(t), nil)
	net := reporttest.EntryRow(d, rubric.Network)
	assert.Equal(t, "declares upstream commit 0123456789ab (not verified)", net.Provenance[rubric.ComponentEgress], "a label with parentheses is read whole")
	want := "execd: official; egress: declares upstream commit 0123456789ab (not verified); sandbox: stand-in"
	assert.Equal(t, want, net.ProvenanceLine())
	assert.Equal(t, "execd: official; sandbox: stand-in", reporttest.EntryRow(d, rubric.M1).ProvenanceLine())
	assert.Empty(t, reporttest.EntryRow(d, rubric.M0).ProvenanceLine(), "M0 rests on the control plane only")

	var md strings.Builder
	require.NoError(t, WriteMarkdown(&md, d))
	assert.Contains(t, md.String(), "*rests on "+Cell(want)+"*")
	assert.Contains(t, md.String(), "| **M1** M1 · Minimum closed loop | passed *(stand-in: sandbox)*<br>*rests on "+Cell("execd: official; sandbox: stand-in")+"* |")

	var ju strings.Builder
	require.NoError(t, WriteJUnit(&ju, d))
	var suites junitSuites
	require.NoError(t, xml.Unmarshal([]byte(ju.String()), &suites))
	found := false
	for _, c := range suites.Suites[0].Cases {
		if strings.HasPrefix(c.Name, "network:") {
			found = true
			require.NotNil(t, c.Properties)
			assert.Contains(t, c.Properties.Property, junitProperty{Name: "provenance: execd", Value: "official"})
			assert.Contains(t, c.Properties.Property, junitProperty{Name: "provenance: egress", Value: "declares upstream commit 0123456789ab (not verified)"})
			assert.Contains(t, c.SystemOut.Text, "rests on: "+want)
		}
	}
	assert.True(t, found)

	var gs strings.Builder
	require.NoError(t, WriteGradescope(&gs, report.Scored(d)))
	var res struct {
		Tests []struct {
			Name      string         `json:"name"`
			Output    string         `json:"output"`
			ExtraData map[string]any `json:"extra_data"`
		} `json:"tests"`
	}
	require.NoError(t, json.Unmarshal([]byte(gs.String()), &res))
	seen := false
	for _, tc := range res.Tests {
		if strings.HasPrefix(tc.Name, "network:") {
			seen = true
			assert.Contains(t, tc.Output, "*Rests on:* "+Cell(want))
			assert.Equal(t, map[string]any{"execd": "official", "egress": "declares upstream commit 0123456789ab (not verified)", "sandbox": "stand-in"}, tc.ExtraData["rests_on"])
		}
	}
	assert.True(t, seen)
	assert.NotContains(t, gs.String(), "upstream-built")
}
