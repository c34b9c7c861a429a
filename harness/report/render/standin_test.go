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

// TestStandInMarkedPerEntry: on a target with stand-ins each entry says which
// its verdict rests on, in report.json, report.md, junit.xml, Gradescope's
// results.json and report.html;
// entries the target cannot measure, and lifecycle-only ones, say nothing.
func TestStandInMarkedPerEntry(t *testing.T) {
	t.Parallel()
	d := reporttest.StandInDoc(t)
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentEgress, rubric.ComponentSandboxImage}, d.StandIns)
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentEgress, rubric.ComponentSandboxImage}, reporttest.EntryRow(d, rubric.Network).StandIns)
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentSandboxImage}, reporttest.EntryRow(d, rubric.M1).StandIns)
	assert.Empty(t, reporttest.EntryRow(d, rubric.M0).StandIns, "M0 is lifecycle only")
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentEgress, rubric.ComponentSandboxImage}, reporttest.EntryRow(d, rubric.Credential).StandIns,
		"what was measured of credential rests on the stand-ins too")
	assert.Empty(t, reporttest.EntryRow(d, rubric.D3).StandIns, "D3 was not measured")
	assert.Empty(t, reporttest.EntryRow(d, rubric.Budget).StandIns, "budget timed out: nothing measured")
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentSandboxImage}, reporttest.EntryRow(d, rubric.Observability).StandIns, "a harness error is marked too")
	assert.Empty(t, reporttest.EntryRow(d, rubric.M2).StandIns, "no scenario measured M2")

	var js strings.Builder
	require.NoError(t, WriteJSON(&js, d))
	var parsed struct {
		StandIns   []string `json:"stand_ins"`
		Milestones []struct {
			ID       string   `json:"id"`
			StandIns []string `json:"stand_ins"`
		} `json:"milestones"`
	}
	require.NoError(t, json.Unmarshal([]byte(js.String()), &parsed))
	assert.Equal(t, []string{"execd", "egress", "sandbox"}, parsed.StandIns)
	assert.Equal(t, "M0", parsed.Milestones[0].ID)
	assert.Empty(t, parsed.Milestones[0].StandIns)
	assert.Equal(t, []string{"execd", "sandbox"}, parsed.Milestones[1].StandIns)

	var md strings.Builder
	require.NoError(t, WriteMarkdown(&md, d))
	assert.Contains(t, md.String(), "**Stand-ins:** this target's execd, egress, sandbox are built by this project")
	assert.Contains(t, md.String(), "| **network** "+Cell("Network security: targets not allowed are denied")+" | **FAILED** *(stand-in: execd, egress, sandbox)*<br>*rests on "+Cell("execd: stand-in; egress: stand-in; sandbox: stand-in")+"* |")
	assert.Contains(t, md.String(), "| **M1** M1 · Minimum closed loop | passed *(stand-in: execd, sandbox)*<br>*rests on "+Cell("execd: stand-in; sandbox: stand-in")+"* |")
	assert.Contains(t, md.String(), "| **M0** M0 · Contract verification | passed | ")

	var ju strings.Builder
	require.NoError(t, WriteJUnit(&ju, d))
	var suites junitSuites
	require.NoError(t, xml.Unmarshal([]byte(ju.String()), &suites))
	assert.Contains(t, ju.String(), `<property name="stand_ins" value="execd, egress, sandbox"></property>`)
	for _, c := range suites.Suites[0].Cases {
		if strings.HasPrefix(c.Name, "network:") {
			require.NotNil(t, c.Failure)
			assert.Contains(t, c.Failure.Message, "[rests on stand-in execd, egress, sandbox (built by this project, not OpenSandbox's)]")
			assert.Contains(t, c.SystemOut.Text, "stand-in: rests on stand-in execd, egress, sandbox")
		}
	}

	var gs strings.Builder
	require.NoError(t, WriteGradescope(&gs, report.Scored(d)))
	assert.Contains(t, gs.String(), "*Stand-in:* this verdict rests on stand-in execd, sandbox (built by this project, not OpenSandbox's)")

	var ht strings.Builder
	require.NoError(t, WriteHTML(&ht, report.Scored(d)))
	assert.Contains(t, ht.String(), `<tr id="stand-ins"><td>Stand-ins</td><td>execd, egress, sandbox: built by this project`)
	assert.Contains(t, ht.String(), `<span class="small standin" title="this verdict rests on components built by this project, not OpenSandbox's own">stand-in: execd, sandbox</span>`)
	assert.Equal(t, strings.Count(ht.String(), `class="small standin"`), markedRows(d), "one marker per marked row")
}

// TestNoStandInOnBundledServer: the bundled server's report has no marker at all.
func TestNoStandInOnBundledServer(t *testing.T) {
	t.Parallel()
	d := reporttest.FixtureDoc(t)
	assert.Empty(t, d.StandIns)
	assert.Zero(t, markedRows(d))
	var md, js strings.Builder
	require.NoError(t, WriteMarkdown(&md, d))
	require.NoError(t, WriteJSON(&js, d))
	assert.NotContains(t, md.String(), "stand-in")
	assert.NotContains(t, js.String(), "stand_ins")
}

func markedRows(d report.Document) int {
	n := 0
	for _, rows := range [][]report.EntryRow{d.Criteria, d.Milestones, d.Drills} {
		for _, r := range rows {
			if len(r.StandIns) > 0 {
				n++
			}
		}
	}
	return n
}
