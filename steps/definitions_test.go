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

// The registrar records what godog would refuse as an error, never a
// silent gap in the rubric index, and records a definition's own function.
func TestRegistrarRecords(t *testing.T) {
	t.Parallel()
	var defs []Definition
	var err error
	r := registrar{defs: &defs, err: &err}
	r.Step(`^a step$`, claimsAtLeast)
	require.NoError(t, err)
	require.Len(t, defs, 1)
	assert.Equal(t, "steps.claimsAtLeast", defs[0].Func)
	assert.Equal(t, "steps/analysis_steps.go", defs[0].File)
	assert.True(t, defs[0].Match("a step"))
	r.Step(`^(unclosed$`, claimsAtLeast)
	assert.ErrorContains(t, err, "unclosed")
	err = nil
	r.Step(`^x$`, "not a function")
	assert.ErrorContains(t, err, "not a function")
	assert.Len(t, defs, 1)
}
