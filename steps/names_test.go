package steps

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSanitizeKeepsExtension(t *testing.T) {
	long := strings.Repeat("a", 150) + ".json"
	got := sanitize(long)
	assert.LessOrEqual(t, len(got), 100)
	assert.Equal(t, ".json", filepath.Ext(got))
	assert.Equal(t, "a_b_c.txt", sanitize("a/b c.txt"))
	assert.Equal(t, "_", sanitize("..."))
}

func TestSlugIsShortAndStable(t *testing.T) {
	s := &scenario{name: "Under the subject's own policy a non-allowed host is denied and an allowed one is reached"}
	assert.LessOrEqual(t, len(s.slug()), maxSlug)
	assert.Equal(t, s.slug(), s.slug())
	assert.False(t, strings.HasSuffix(s.slug(), "-"))
	assert.Equal(t, "a-run-that-fails-midway-still-cleans-up", (&scenario{name: "A run that fails midway still cleans up"}).slug())
}
