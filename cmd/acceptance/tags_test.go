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
