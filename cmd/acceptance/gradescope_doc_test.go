package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// documentedOutcomes reads a doc's table of attacks by level: the
// row of each member (its first cell names it, e.g. `hostile-spy`) and the
// column headed by the level; a cell starting with "stopped" is stopped, one
// starting with "not stopped" (or "succeeds") is not.
func documentedOutcomes(t *testing.T, path, level string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[string]bool{}
	col := -1
	member := regexp.MustCompile("hostile-[a-z0-9-]+")
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "|") {
			col = -1
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`*")
		}
		if col < 0 {
			for i, c := range cells {
				if strings.EqualFold(c, level) {
					col = i
				}
			}
			continue
		}
		m := member.FindString(cells[0])
		if m == "" || col >= len(cells) {
			continue
		}
		cell := strings.ToLower(cells[col])
		switch {
		case strings.HasPrefix(cell, "not stopped"), strings.HasPrefix(cell, "succeeds"):
			out[m] = false
		case strings.HasPrefix(cell, "stopped"):
			out[m] = true
		}
	}
	return out
}

// TestGradescopeHostileTableComplete: docs/grading.md documents an outcome at
// the uid level for every round-1 member TestGradescopeHostile grades (the e2e
// test checks each against what it measures).
func TestGradescopeHostileTableComplete(t *testing.T) {
	got := documentedOutcomes(t, filepath.Join(repoRoot(t), "docs", "grading.md"), "uid")
	for _, m := range []string{"hostile-spy", "hostile-forger", "hostile-canary-wiper", "hostile-grader-killer", "hostile-saboteur",
		"hostile-trojan", "hostile-fanout-fill", "hostile-sparse-symlink", "hostile-never-exits"} {
		_, ok := got[m]
		assert.True(t, ok, "docs/grading.md's Gradescope table has no uid outcome for %s", m)
	}
	assert.True(t, got["hostile-saboteur"], "the saboteur meets each execd's access token at level uid (issue 30)")
	assert.True(t, got["hostile-spy"])
}
