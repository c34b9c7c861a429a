package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	mdLink    = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	fenced    = regexp.MustCompile("(?s)```.*?```")
)

// anchorOf is GitHub's anchor for a heading: lower case, punctuation other
// than - and _ dropped, spaces as hyphens.
func anchorOf(heading string) string {
	a := strings.ToLower(strings.TrimSpace(heading))
	a = regexp.MustCompile(`[^\p{L}\p{N}\-_ ]`).ReplaceAllString(a, "")
	return strings.ReplaceAll(a, " ", "-")
}

func anchorsOf(text string) map[string]bool {
	out := map[string]bool{}
	for _, m := range mdHeading.FindAllStringSubmatch(fenced.ReplaceAllString(text, ""), -1) {
		out[anchorOf(m[1])] = true
	}
	return out
}

// Every relative link of the documentation leads to a file that exists and,
// with a #fragment, to a heading of that file: pages move (the README was
// split into docs/), links must follow.
func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	records, err := filepath.Glob(filepath.Join(root, "harness", "fidelity", "runs", "*.md"))
	require.NoError(t, err)
	// The fidelity ledger embeds the comparison's notes: their links are
	// written for FIDELITY.md's place (checked there, not here).
	records = slices.DeleteFunc(records, func(f string) bool { return filepath.Base(f) == "comparison-notes.md" })
	files := append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "mock-server", "README.md"),
		filepath.Join(root, "fixtures", "submissions", "README.md")}, append(docs, records...)...)
	links := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, f)
		for _, m := range mdLink.FindAllStringSubmatch(fenced.ReplaceAllString(string(b), ""), -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue
			}
			links++
			path, frag, _ := strings.Cut(target, "#")
			dest := f
			if path != "" {
				dest = filepath.Join(filepath.Dir(f), path)
			}
			if _, err := os.Stat(dest); err != nil {
				t.Errorf("%s: link %s: %v", rel, target, err)
				continue
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			db, err := os.ReadFile(dest)
			require.NoError(t, err)
			assert.True(t, anchorsOf(string(db))[frag], "%s: link %s: no heading with that anchor in %s", rel, target, dest)
		}
	}
	assert.Greater(t, links, 30, "the documentation's links were found")
}

func TestAnchorOf(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "grading-against-a-real-opensandbox-on-docker---target-docker", anchorOf("Grading against a real OpenSandbox on Docker (`--target docker`)"))
	assert.Equal(t, "the-submission-manifest-capstoneyaml", anchorOf("The submission manifest (`capstone.yaml`)"))
	assert.Equal(t, "agent-mode---agent", anchorOf("Agent mode (`--agent`)"))
}
