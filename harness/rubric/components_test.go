package rubric

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDependsOnCoversCourse: every criterion, milestone and drill says what
// it rests on (DependsOn set, empty for none), no scoring item does, only
// known components are named, and the DependsOn table is exactly the entries'.
func TestDependsOnCoversCourse(t *testing.T) {
	t.Parallel()
	known := map[Component]bool{}
	for _, c := range Components {
		known[c] = true
	}
	for _, e := range Course.All() {
		if e.Kind == KindScoring {
			assert.Nil(t, e.DependsOn, "scoring item %s rests on nothing of its own", e.ID)
			_, ok := DependsOn[e.ID]
			assert.False(t, ok, "scoring item %s needs no row", e.ID)
			continue
		}
		require.NotNil(t, e.DependsOn, "entry %s does not say what it rests on (DependsOn; empty for none)", e.ID)
		assert.Equal(t, e.DependsOn, DependsOn[e.ID], "entry %s", e.ID)
		for _, c := range e.DependsOn {
			assert.True(t, known[c], "entry %s: unknown component %q", e.ID, c)
		}
		// Whatever runs through the egress sidecar runs commands there too.
		if slices.Contains(e.DependsOn, ComponentEgress) {
			assert.True(t, slices.Contains(e.DependsOn, ComponentExecd), "entry %s rests on egress but not on execd", e.ID)
		}
	}
	for id := range DependsOn {
		_, ok := Course.Get(id)
		assert.True(t, ok, "DependsOn names %s, which is not in the course", id)
	}
}

// TestFailOnlyOnViolationCoversCourse: a security criterion fails only on a
// violated security property, so every one of them is FailOnlyOnViolation;
// every such entry is measured through the security boundary (it rests on
// the egress sidecar, or is the isolation criterion) and feeds a score; no
// scoring item is one; the list is exactly the entries'.
func TestFailOnlyOnViolationCoversCourse(t *testing.T) {
	t.Parallel()
	for _, id := range SecurityCriteria {
		e, ok := Course.Get(id)
		require.True(t, ok, "%s", id)
		assert.True(t, e.FailOnlyOnViolation, "security criterion %s must fail only on a violated property", id)
	}
	weights := EntryWeights(Course.Items())
	var want []ID
	for _, e := range Course.All() {
		if !e.FailOnlyOnViolation {
			continue
		}
		want = append(want, e.ID)
		assert.NotEqual(t, KindScoring, e.Kind, "%s", e.ID)
		assert.True(t, e.Security || slices.Contains(e.DependsOn, ComponentEgress),
			"%s fails only on a violated property but measures no security boundary", e.ID)
		assert.Positive(t, weights[e.ID].Weight, "%s feeds no score", e.ID)
	}
	assert.Equal(t, want, FailOnlyOnViolation)
}

// TestRestsOn: the egress-dependent entries name the egress stand-in, the
// ones over execd the execd stand-in, lifecycle-only ones nothing; on a
// target without stand-ins nothing is marked.
func TestRestsOn(t *testing.T) {
	t.Parallel()
	all := []Component{ComponentSandboxImage, ComponentEgress, ComponentExecd}
	for _, id := range []ID{Network, Credential, Injection, M3, D1, D4} {
		assert.Equal(t, []Component{ComponentExecd, ComponentEgress, ComponentSandboxImage}, RestsOn(id, all), "%s", id)
	}
	for _, id := range []ID{Function, Accuracy, M1, M2, M4, D2, D5} {
		assert.Equal(t, []Component{ComponentExecd, ComponentSandboxImage}, RestsOn(id, all), "%s", id)
	}
	for _, id := range []ID{M0, D3, Cost, Maintainability} {
		assert.Empty(t, RestsOn(id, all), "%s", id)
	}
	assert.Equal(t, []Component{ComponentEgress}, RestsOn(Network, []Component{ComponentEgress}), "only the stand-ins present")
	for _, e := range Course.All() {
		assert.Nil(t, RestsOn(e.ID, nil), "bundled server: %s rests on no stand-in", e.ID)
	}
}

// Moving FailOnlyOnViolation and DependsOn into the entries did not change
// the rubric's name: bundles graded before and after merge into one class.
func TestHashUnchangedByEntryFields(t *testing.T) {
	t.Parallel()
	var stripped []Entry
	for _, e := range Course.All() {
		e.FailOnlyOnViolation, e.DependsOn = false, nil
		stripped = append(stripped, e)
	}
	assert.Equal(t, MustRegistry(stripped...).Hash(), Course.Hash())
}
