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
		{"--from", "0.2.3", "--order", "ba"},
		{"--from", "0.2.3", "--run-arg=--execd-image=x/execd:1"},
		{"--from", "9.9.9"},
		{"--from", "9.9.9", "--from-execd-image", "x/execd:1"},
	} {
		var out, errb bytes.Buffer
		assert.Equal(t, 2, dispatch(append([]string{"upgrade-check"}, args...), &out, &errb), "%q: %s", args, errb.String())
		assert.NotContains(t, errb.String(), "panic")
	}
	var out, errb bytes.Buffer
	assert.Equal(t, 2, dispatch([]string{"upgrade-check", "--from", "9.9.9"}, &out, &errb))
	assert.Contains(t, errb.String(), "not in the version table (harness/dockertarget/versions.go", "a version nobody paired is refused naming the table")
	errb.Reset()
	assert.Equal(t, 2, dispatch([]string{"upgrade-check", "--from", "0.2.3", "--run-arg=--egress-image=x/egress:1"}, &out, &errb))
	assert.Contains(t, errb.String(), "--from-execd-image/--to-execd-image")
}
