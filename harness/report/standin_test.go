package report

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// standInDoc is the fixture graded on a real target whose execd, egress and
// sandbox images are stand-ins (the docker target without a registry).
func standInDoc(t *testing.T) Document {
	m := fixtureMeta()
	m.Target, m.TargetKind = "http://127.0.0.1:8090", rubric.TargetReal
	m.Versions = map[string]string{
		"harness":                  "dev",
		"component: control plane": "opensandbox-server==1.1.1 (official)",
		"component: execd image osb-acceptance/execd-standin:9e0c":   "sha256:ecae (stand-in)",
		"component: egress image osb-acceptance/egress-standin:5657": "sha256:7ec1 (stand-in)",
		"component: sandbox image python:3.12":                       "sha256:d29d (stand-in)",
	}
	d, _ := Build(rubric.Course, m, fixtureOutcomes(t), nil)
	return d
}

func row(d Document, id rubric.ID) EntryRow {
	for _, rows := range [][]EntryRow{d.Criteria, d.Milestones, d.Drills} {
		for _, r := range rows {
			if r.ID == id {
				return r
			}
		}
	}
	return EntryRow{}
}

func TestStandInsOf(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentEgress, rubric.ComponentSandboxImage},
		StandInsOf(standInDoc(t).Versions))
	assert.Equal(t, []rubric.Component{rubric.ComponentEgress}, StandInsOf(map[string]string{
		"component: execd image opensandbox/execd:v1.0.5":         "sha256:aa (official)",
		"component: egress image osb-acceptance/egress-standin:1": "sha256:bb (stand-in)",
	}))
	assert.Empty(t, StandInsOf(map[string]string{"harness": "dev", "server": "mock 1.1.1"}), "the bundled server has no stand-ins")
	assert.Empty(t, StandInsOf(map[string]string{"stand-ins": "free text mentioning (stand-in)"}), "only component: keys count")
}

// TestStandInMarkedPerEntry: on a target with stand-ins each entry says which
// its verdict rests on, in report.json, report.md, junit.xml, Gradescope's
// results.json and report.html;
// entries the target cannot measure, and lifecycle-only ones, say nothing.
func TestStandInMarkedPerEntry(t *testing.T) {
	t.Parallel()
	d := standInDoc(t)
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentEgress, rubric.ComponentSandboxImage}, d.StandIns)
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentEgress, rubric.ComponentSandboxImage}, row(d, rubric.Network).StandIns)
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentSandboxImage}, row(d, rubric.M1).StandIns)
	assert.Empty(t, row(d, rubric.M0).StandIns, "M0 is lifecycle only")
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentEgress, rubric.ComponentSandboxImage}, row(d, rubric.Credential).StandIns,
		"what was measured of credential rests on the stand-ins too")
	assert.Empty(t, row(d, rubric.D3).StandIns, "D3 was not measured")
	assert.Empty(t, row(d, rubric.Budget).StandIns, "budget timed out: nothing measured")
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentSandboxImage}, row(d, rubric.Observability).StandIns, "a harness error is marked too")
	assert.Empty(t, row(d, rubric.M2).StandIns, "no scenario measured M2")

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
	assert.Contains(t, md.String(), "| **network** Network security: targets not allowed are denied | **FAILED** *(stand-in: execd, egress, sandbox)* |")
	assert.Contains(t, md.String(), "| **M1** M1 · Minimum closed loop | passed *(stand-in: execd, sandbox)* |")
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
	require.NoError(t, WriteGradescope(&gs, d))
	assert.Contains(t, gs.String(), "*Stand-in:* this verdict rests on stand-in execd, sandbox (built by this project, not OpenSandbox's)")

	var ht strings.Builder
	require.NoError(t, WriteHTML(&ht, d))
	assert.Contains(t, ht.String(), `<tr id="stand-ins"><td>Stand-ins</td><td>execd, egress, sandbox: built by this project`)
	assert.Contains(t, ht.String(), `<span class="small standin" title="this verdict rests on components built by this project, not OpenSandbox's own">stand-in: execd, sandbox</span>`)
	assert.Equal(t, strings.Count(ht.String(), `class="small standin"`), markedRows(d), "one marker per marked row")
}

// TestNoStandInOnBundledServer: the bundled server's report has no marker at all.
func TestNoStandInOnBundledServer(t *testing.T) {
	t.Parallel()
	d := fixtureDoc(t)
	assert.Empty(t, d.StandIns)
	assert.Zero(t, markedRows(d))
	var md, js strings.Builder
	require.NoError(t, WriteMarkdown(&md, d))
	require.NoError(t, WriteJSON(&js, d))
	assert.NotContains(t, md.String(), "stand-in")
	assert.NotContains(t, js.String(), "stand_ins")
}

func markedRows(d Document) int {
	n := 0
	for _, rows := range [][]EntryRow{d.Criteria, d.Milestones, d.Drills} {
		for _, r := range rows {
			if len(r.StandIns) > 0 {
				n++
			}
		}
	}
	return n
}

// TestProvenancePerEntry: every component's provenance label (official,
// from the engine, upstream-built from commit X, stand-in) is read from the
// versions and carried per entry for the components its verdict rests on.
func TestProvenancePerEntry(t *testing.T) {
	v := map[string]string{
		"component: execd image opensandbox/execd:v1.1.0":   "sha256:aa (upstream-built from commit 3bb6fad3f00d)",
		"component: egress image opensandbox/egress:v1.1.7": "sha256:bb (from the engine)",
		"component: sandbox image python:3.12":              "sha256:cc (stand-in)",
		"component: control plane":                          "opensandbox-server==1.1.1 (official)",
	}
	p := ProvenanceOf(v)
	assert.Equal(t, map[rubric.Component]string{
		rubric.ComponentExecd:        "upstream-built from commit 3bb6fad3f00d",
		rubric.ComponentEgress:       "from the engine",
		rubric.ComponentSandboxImage: "stand-in",
	}, p)
	assert.Equal(t, map[rubric.Component]string{rubric.ComponentExecd: "upstream-built from commit 3bb6fad3f00d", rubric.ComponentSandboxImage: "stand-in"},
		restsOnProvenance(rubric.M1, p), "M1 rests on execd and the sandbox image")
	assert.Nil(t, restsOnProvenance(rubric.M0, p), "M0 is lifecycle only")
	assert.Equal(t, []rubric.Component{rubric.ComponentSandboxImage}, StandInsOf(v), "only the stand-in is a stand-in")
	assert.Nil(t, ProvenanceOf(map[string]string{"server": "mock 1.1.1"}), "the bundled server has no components")
}
