package steps

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Definitions reads what `godog -d` prints: the same expressions, in the same
// order, each with a function in this package and its source line.
func TestDefinitions(t *testing.T) {
	t.Parallel()
	defs, err := Definitions()
	require.NoError(t, err)
	var out bytes.Buffer
	godog.TestSuite{ScenarioInitializer: (&Env{}).InitializeScenario,
		Options: &godog.Options{ShowStepDefinitions: true, Format: "progress", Output: &out, NoColors: true}}.Run()
	plain := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(out.String(), "") // godog colours -d regardless
	lines := strings.Split(strings.TrimSpace(plain), "\n")
	require.Len(t, defs, len(lines))
	for i, d := range defs {
		assert.True(t, strings.HasPrefix(lines[i], d.Expr), "godog -d line %d %q vs %q", i, lines[i], d.Expr)
		assert.True(t, strings.HasPrefix(d.Func, "steps."), d.Func)
		assert.Regexp(t, `^steps/[a-z_]+\.go$`, d.File)
		assert.Positive(t, d.Line)
	}
	assert.True(t, defs[0].Match("the submission's contract check is run"))
}

// godog locates each step where its register…Steps function names it (its
// own file:line), never in the registrar: what `godog -d` and godog.log
// show leads to the step, and the function godog names is the index's.
func TestStepLocationIsTheStepsOwn(t *testing.T) {
	t.Parallel()
	defs, err := Definitions()
	require.NoError(t, err)
	var out bytes.Buffer
	godog.TestSuite{ScenarioInitializer: (&Env{}).InitializeScenario,
		Options: &godog.Options{ShowStepDefinitions: true, Format: "progress", Output: &out, NoColors: true}}.Run()
	plain := regexp.MustCompile(`\x1b\[[0-9;]*m`).ReplaceAllString(out.String(), "")
	lines := strings.Split(strings.TrimSpace(plain), "\n")
	require.Len(t, defs, len(lines))
	loc := regexp.MustCompile(`\s([a-z_]+\.go):(\d+) -> (\S+)$`)
	for i, d := range defs {
		m := loc.FindStringSubmatch(lines[i])
		require.NotNil(t, m, "godog -d line %d has no location: %q", i, lines[i])
		assert.NotEqual(t, "definitions.go", m[1], "godog -d line %d locates the step in the registrar: %q", i, lines[i])
		assert.True(t, strings.HasSuffix(m[1], "_steps.go"), "godog -d line %d: %q is not a register…Steps file", i, lines[i])
		assert.True(t, strings.HasSuffix(d.Func, strings.TrimPrefix(m[3], "github.com/osb-capstone/acceptance/")) ||
			strings.HasSuffix(m[3], d.Func), "godog -d line %d names %s, the index %s", i, m[3], d.Func)
	}
}

// The recorder records what godog would refuse as an error, never a
// silent gap in the rubric index, and records a definition's own function.
func TestRecorderRecords(t *testing.T) {
	t.Parallel()
	r := &recorder{}
	r.Step(`^a step$`, claimsAtLeast)
	require.NoError(t, r.err)
	require.Len(t, r.defs, 1)
	assert.Equal(t, "steps.claimsAtLeast", r.defs[0].Func)
	assert.Equal(t, "steps/analysis_steps.go", r.defs[0].File)
	assert.True(t, r.defs[0].Match("a step"))
	r.Step(`^(unclosed$`, claimsAtLeast)
	assert.ErrorContains(t, r.err, "unclosed")
	r.err = nil
	r.Step(`^x$`, "not a function")
	assert.ErrorContains(t, r.err, "not a function")
	r.err = nil
	r.Step(42, claimsAtLeast)
	assert.ErrorContains(t, r.err, "not a string")
	assert.Len(t, r.defs, 1)
}
