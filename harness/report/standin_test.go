package report_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

func TestStandInsOf(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []rubric.Component{rubric.ComponentExecd, rubric.ComponentEgress, rubric.ComponentSandboxImage},
		report.StandInsOf(reporttest.StandInDoc(t).Versions))
	assert.Equal(t, []rubric.Component{rubric.ComponentEgress}, report.StandInsOf(map[string]string{
		"component: execd image opensandbox/execd:v1.0.5":         "sha256:aa (official)",
		"component: egress image osb-acceptance/egress-standin:1": "sha256:bb (stand-in)",
	}))
	assert.Empty(t, report.StandInsOf(map[string]string{"harness": "dev", "server": "mock 1.1.1"}), "the bundled server has no stand-ins")
	assert.Empty(t, report.StandInsOf(map[string]string{"stand-ins": "free text mentioning (stand-in)"}), "only component: keys count")
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
	p := report.ProvenanceOf(v)
	assert.Equal(t, map[rubric.Component]string{
		rubric.ComponentExecd:        "upstream-built from commit 3bb6fad3f00d",
		rubric.ComponentEgress:       "from the engine",
		rubric.ComponentSandboxImage: "stand-in",
	}, p)
	assert.Equal(t, map[rubric.Component]string{rubric.ComponentExecd: "upstream-built from commit 3bb6fad3f00d", rubric.ComponentSandboxImage: "stand-in"},
		report.RestsOnProvenance(rubric.M1, p), "M1 rests on execd and the sandbox image")
	assert.Nil(t, report.RestsOnProvenance(rubric.M0, p), "M0 is lifecycle only")
	assert.Equal(t, []rubric.Component{rubric.ComponentSandboxImage}, report.StandInsOf(v), "only the stand-in is a stand-in")
	assert.Nil(t, report.ProvenanceOf(map[string]string{"server": "mock 1.1.1"}), "the bundled server has no components")
}
