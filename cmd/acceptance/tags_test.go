package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCheckTags(t *testing.T) {
	for _, ok := range []string{"", "@milestone:M0", "@milestone:M0,@milestone:M1", "@criterion:network && ~@fault", "~@large", "@milestone:M2&&~@large,@drill:D1"} {
		assert.NoError(t, checkTags(ok), ok)
	}
	for _, bad := range []string{"@milestone:M0&&", ",@drill:D1", "milestone:M0", "@", "@milestone:M7", "@a b", "~~@large"} {
		assert.Error(t, checkTags(bad), bad)
	}
}

// An exclusion written in some alternatives only gets a note with the
// expression that excludes it everywhere; one in every alternative, or a
// single alternative, gets none.
func TestTagsPrecedenceNote(t *testing.T) {
	for _, quiet := range []string{"", "~@large", "@milestone:M2 && ~@large", "@milestone:M1,@milestone:M2", tagsExcept([]string{"@milestone:M1", "@milestone:M2"}, "@large", "@agent")} {
		assert.Empty(t, tagsPrecedenceNote(quiet), quiet)
	}
	n := tagsPrecedenceNote("@milestone:M1,@milestone:M2 && ~@large")
	assert.Contains(t, n, "~@large applies only to the alternatives that name it")
	assert.Contains(t, n, `"@milestone:M1 && ~@large,@milestone:M2 && ~@large"`)
	fixed := tagsExcept([]string{"@milestone:M1", "@milestone:M2"}, "@large")
	assert.Contains(t, n, fixed, "the note's fix is the form tagsExcept builds")
}
