package importrules

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The project keeps owned values in their owner: a second copy of the points
// tolerance or of M5's split fails this test (and CI).
func TestProjectValueRules(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	g, err := Load("go", root)
	require.NoError(t, err)
	for _, r := range ProjectValues {
		for _, f := range r.Only {
			assert.FileExists(t, filepath.Join(root, f), "rule %s: its owner moved, update the rule", r.Name)
		}
	}
	vs, err := g.CheckValues(root, ProjectValues)
	require.NoError(t, err)
	for _, v := range vs {
		t.Errorf("owned value copied: %s", v)
	}
}

// The checker catches each planted use of an owned value (a literal in any
// spelling, an owned name in the owner's package), and flags neither the
// owner, nor calls of its functions, nor an excepted package.
func TestCheckerCatchesPlantedValueCopies(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("testdata/planted")
	require.NoError(t, err)
	g, err := Load("go", root)
	require.NoError(t, err)
	vs, err := g.CheckValues(root, ProjectValues)
	require.NoError(t, err)
	var got []string
	for _, v := range vs {
		got = append(got, v.Rule+" "+v.Pos+" "+v.Use)
	}
	assert.ElementsMatch(t, []string{
		"points-compare-only-in-score harness/review/items.go:7 0.005",
		"points-compare-only-in-score harness/review/items.go:9 5e-3",
		"points-compare-only-in-score harness/rubric/defense.go:4 defenseFraction",
	}, got)

	// An exported owned name is caught through its import, renamed or not.
	vs, err = g.CheckValues(root, []ValueRule{{Name: "split", From: []string{"harness/..."}, Only: []string{"harness/rubric/score.go"},
		Pkg: "harness/rubric", Names: []string{"M5Split"}}})
	require.NoError(t, err)
	got = nil
	for _, v := range vs {
		got = append(got, v.Pos+" "+v.Use)
	}
	assert.ElementsMatch(t, []string{"harness/review/items.go:11 r.M5Split"}, got)

	_, err = g.CheckValues(root, []ValueRule{{Name: "x", From: []string{"..."}, Pkg: "nope", Names: []string{"a"}}})
	assert.ErrorContains(t, err, "no package nope")
	_, err = g.CheckValues(root, []ValueRule{{Name: "x", From: []string{"..."}, Only: []string{"nowhere/x.go"}}})
	assert.ErrorContains(t, err, "in no package")
}
