package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A missing wheels directory is named, but only after the command line's own
// mistakes: on a fresh clone (no make deps) a usage error still says what is
// wrong with the command line.
func TestWheelsCheckedAfterUsageErrors(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no-wheels")
	var out, errb bytes.Buffer
	assert.Equal(t, 2, dispatch([]string{"run", "--wheels", missing, "--subject", "pyhton3 agent.py"}, &out, &errb))
	assert.Contains(t, errb.String(), `the program "pyhton3" is not found on PATH`)
	assert.NotContains(t, errb.String(), "--wheels")

	errb.Reset()
	assert.Equal(t, 2, dispatch([]string{"run", "--wheels", missing, "--out", t.TempDir(), "--subject", "true"}, &out, &errb))
	assert.Contains(t, errb.String(), "--wheels "+missing+": ")
	assert.Contains(t, errb.String(), "make deps")

	errb.Reset()
	assert.Equal(t, 2, dispatch([]string{"grade", "--wheels", missing, "--out", t.TempDir(), filepath.Join("testdata", "no-such-submission")}, &out, &errb))
	assert.NotContains(t, errb.String(), "--wheels")
}
