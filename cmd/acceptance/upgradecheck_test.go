package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUpgradeCheckUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"--from", "1.1.1", "--to", "1.1.1"},
		{"--from", "0.2.3", "--rounds", "0"},
		{"--from", "1; rm", "--to", "1.1.1"},
		{"--from", "0.2.3", "stray"},
		{"--from", "0.2.3", "--tags", "@a &&"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, 2, dispatch(append([]string{"upgrade-check"}, args...), &out, &errb), "%q: %s", args, errb.String())
		assert.NotContains(t, errb.String(), "panic")
	}
}
