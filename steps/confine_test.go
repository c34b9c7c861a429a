package steps

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRunIDTellsNoDrill: CAPSTONE_RUN_ID once ended in the run's key
// ("…-sales-capacity-429"), so a submission could tell a drill from a normal
// run. Its suffix is now opaque: the same shape for every key, stable within
// a grade, and not computable from a guessed key without the grade's salt.
func TestRunIDTellsNoDrill(t *testing.T) {
	e := &Env{opt: Options{RunID: "20261201T191819Z-588fd2"}, runSalt: randomHex(16)}
	other := &Env{opt: Options{RunID: "20261201T191819Z-588fd2"}, runSalt: randomHex(16)}
	seen := map[string]bool{}
	for _, key := range []string{"sales", "sales-capacity-429", "sales-sigkill-mid-run", "bom_utf8"} {
		id := e.runIDFor(key)
		assert.NotContains(t, id, "sales", id)
		assert.NotContains(t, id, "capacity", id)
		assert.Len(t, id, len(e.opt.RunID)+1+12, id)
		assert.Equal(t, id, e.runIDFor(key), "stable within a grade")
		assert.NotEqual(t, id, other.runIDFor(key), "another grade's salt gives another id")
		assert.False(t, seen[id], "distinct per key")
		seen[id] = true
	}
}
