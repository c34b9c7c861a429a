package importrules

import (
	"path"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The project keeps its layering: a broken rule fails this test (and CI).
func TestProjectImportRules(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	g, err := Load("go", root)
	require.NoError(t, err)
	require.Equal(t, "github.com/osb-capstone/acceptance", g.Module)
	for _, r := range Project {
		n := 0
		for p := range g.Pkgs {
			if matchAny(r.From, p) {
				n++
			}
		}
		assert.Positive(t, n, "rule %s applies to no package: the layout moved, update the rule", r.Name)
		for _, from := range r.From {
			found := false
			for p := range g.Pkgs {
				found = found || Match(from, p)
			}
			assert.True(t, found, "rule %s names %s, which matches no package: the layout moved, update the rule", r.Name, from)
		}
		for _, e := range r.Except {
			assert.Contains(t, g.Pkgs, e, "rule %s excepts %s, which does not exist", r.Name, e)
		}
		for _, f := range r.ExceptFiles {
			p := g.Pkgs[path.Dir(f)]
			require.NotNil(t, p, "rule %s excepts %s, whose package does not exist", r.Name, f)
			assert.Contains(t, p.GoFiles, path.Base(f), "rule %s excepts %s, which does not exist", r.Name, f)
		}
	}
	for _, v := range g.Check(Project) {
		t.Errorf("layering broken: %s", v)
	}
	calls, err := g.CheckCalls(root, ProjectCalls)
	require.NoError(t, err)
	for _, v := range calls {
		t.Errorf("layering broken: %s", v)
	}
}

// The checker catches each kind of planted violation, through an import chain
// too, and flags nothing clean or excepted.
func TestCheckerCatchesPlantedViolations(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("testdata/planted")
	require.NoError(t, err)
	g, err := Load("go", root)
	require.NoError(t, err)
	type hit struct{ rule, pkg, dep string }
	var got []hit
	chains := map[hit][]string{}
	for _, v := range g.Check(Project) {
		h := hit{v.Rule, v.Pkg, v.Dep}
		got = append(got, h)
		chains[h] = v.Chain
	}
	assert.ElementsMatch(t, []hit{
		{"harness-never-imports-steps", "harness/model", "steps"},
		{"harness-reaches-server-only-through-wire", "harness/core", "mock-server"},
		{"harness-reaches-server-only-through-wire", "harness/stubs", "mock-server"},
		{"reference-imports-no-grader", "cmd/acceptance/reference", "harness/rubric"},
		{"renderers-import-no-class-summary", "harness/report/render", "harness/report/compare"},
		{"report-core-imports-no-renderer", "harness/report", "harness/report/compare"},
		{"report-core-imports-no-renderer", "harness/report", "harness/report/render"},
		{"rubric-imports-nothing", "harness/rubric", "harness/osb"},
		{"rubric-imports-nothing", "harness/rubric", "mock-server/wire"},
		{"server-imports-no-grader", "mock-server", "harness/summary"},
		{"server-imports-no-grader", "mock-server/wire", "harness/summary"},
		{"wire-imports-nothing", "mock-server/wire", "harness/summary"},
		{"cgroup-imports-nothing", "internal/cgroup", "harness/summary"},
		{"answerfirst-imports-nothing", "internal/answerfirst", "harness/summary"},
		{"fullduplex-imports-nothing", "internal/fullduplex", "harness/summary"},
		{"server-imports-no-grader", "mock-server/runtime", "internal/grading"},
		{"rubric-imports-nothing", "harness/rubric", "harness/summary"},
		{"steps-name-no-runner-and-no-server", "steps", "harness/subject"},
		{"steps-name-no-runner-and-no-server", "steps", "harness/observe"},
		{"command-imports-no-godog", "harness/command", "github.com/cucumber/godog"},
		{"step-work-imports-no-godog", "harness/vanish", "github.com/cucumber/godog"},
	}, got)
	assert.Equal(t, []string{"harness/command", "harness/command/steptext", "github.com/cucumber/godog"},
		chains[hit{"command-imports-no-godog", "harness/command", "github.com/cucumber/godog"}], "through a package of the module too")
	assert.Equal(t, []string{"steps/runner.go", "harness/subject"},
		chains[hit{"steps-name-no-runner-and-no-server", "steps", "harness/subject"}], "a direct rule names the file (launch.go is excepted)")
	assert.Equal(t, []string{"harness/core", "harness/stubs", "mock-server"},
		chains[hit{"harness-reaches-server-only-through-wire", "harness/core", "mock-server"}])
	assert.Equal(t, []string{"harness/report", "harness/report/render", "harness/report/compare"},
		chains[hit{"report-core-imports-no-renderer", "harness/report", "harness/report/compare"}])

	calls, err := g.CheckCalls(root, ProjectCalls)
	require.NoError(t, err)
	var pos []string
	for _, c := range calls {
		pos = append(pos, c.Pos+" "+c.Call)
	}
	assert.ElementsMatch(t, []string{
		"harness/report/render/markdown.go:7 rubric.Evaluate",
		"harness/report/render/html.go:11 rubric.ComputeFinal",
		"harness/report/classreport/class.go:6 report.ComputeFinal",
	}, pos)
}

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pat, pkg string
		want     bool
	}{
		{"...", "anything/at/all", true},
		{"harness/...", "harness", true},
		{"harness/...", "harness/report", true},
		{"harness/...", "harnessx", false},
		{"harness/report", "harness/report/reporttest", false},
		{"harness/report", "harness/report", true},
	} {
		assert.Equal(t, c.want, Match(c.pat, c.pkg), "%s ~ %s", c.pat, c.pkg)
	}
}

// A rule naming a package that does not exist is an error, not a silent pass.
func TestCallRuleOnMissingPackageIsAnError(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("testdata/planted")
	require.NoError(t, err)
	g, err := Load("go", root)
	require.NoError(t, err)
	_, err = g.CheckCalls(root, []CallRule{{Name: "x", Pkg: "nope", Files: []string{"*.go"}}})
	assert.ErrorContains(t, err, "no package nope")
	_, err = g.CheckCalls(root, []CallRule{{Name: "x", Pkg: "harness/report", Files: []string{"nothing_*.go"}}})
	assert.ErrorContains(t, err, "no file of harness/report matches")
}
