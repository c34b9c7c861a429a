package rubric

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDependsOnCoversCourse: every criterion, milestone and drill has a row in
// DependsOn, every row names a course entry, and only known components.
func TestDependsOnCoversCourse(t *testing.T) {
	t.Parallel()
	known := map[Component]bool{}
	for _, c := range Components {
		known[c] = true
	}
	for _, e := range Course.All() {
		if e.Kind == KindScoring {
			_, ok := DependsOn[e.ID]
			assert.False(t, ok, "scoring item %s needs no row", e.ID)
			continue
		}
		deps, ok := DependsOn[e.ID]
		require.True(t, ok, "entry %s has no row in DependsOn", e.ID)
		for _, c := range deps {
			assert.True(t, known[c], "entry %s: unknown component %q", e.ID, c)
		}
		// Whatever runs through the egress sidecar runs commands there too.
		if slices.Contains(deps, ComponentEgress) {
			assert.True(t, slices.Contains(deps, ComponentExecd), "entry %s rests on egress but not on execd", e.ID)
		}
	}
	for id := range DependsOn {
		_, ok := Course.Get(id)
		assert.True(t, ok, "DependsOn names %s, which is not in the course", id)
	}
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
