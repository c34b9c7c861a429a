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

// graderBaseFiles are the files .ci/image.sh hashes into the grader base
// image's tag (its `h=$(cat FILES | sha256sum …)` line), relative to the
// project's root.
func graderBaseFiles(t testing.TB, root string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, ".ci", "image.sh"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^h=\$\(cat ([^|]+) \| sha256sum`).FindSubmatch(b)
	require.NotNil(t, m, ".ci/image.sh keys the base image by h=$(cat FILES | sha256sum …)")
	return strings.Fields(string(m[1]))
}

// TestGraderBaseKeyCoversWhatItsScriptSources: the grader base image's
// cache key hashes its rootfs script and every file the script sources (the
// Debian bootstrap it shares with the docker target's sandbox rootfs), so a
// change to any of them rebuilds the base.
func TestGraderBaseKeyCoversWhatItsScriptSources(t *testing.T) {
	root := repoRoot(t)
	files := graderBaseFiles(t, root)
	assert.Contains(t, files, ".ci/grader-rootfs.sh")
	script, err := os.ReadFile(filepath.Join(root, ".ci", "grader-rootfs.sh"))
	require.NoError(t, err)
	sourced := regexp.MustCompile(`(?m)^\s*(?:\.|source) "\$\(dirname "\$0"\)/([^"]+)"`).FindAllSubmatch(script, -1)
	require.NotEmpty(t, sourced, "the script sources the shared bootstrap")
	for _, m := range sourced {
		assert.Contains(t, files, ".ci/"+string(m[1]), "a sourced file the base image's key does not hash")
	}
}
