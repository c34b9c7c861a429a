package owntests

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCountSummary(t *testing.T) {
	cases := []struct {
		name, out        string
		ok               bool
		pass, fail, skip int
	}{
		{"pytest", "....\n===== 4 passed in 0.12s =====\n", true, 4, 0, 0},
		{"pytest failures", "..F\n=== 1 failed, 2 passed, 1 skipped in 0.3s ===\n", true, 2, 1, 1},
		{"pytest -q", "3 passed in 0.01s\n", true, 3, 0, 0},
		{"pytest errors", "== 1 passed, 2 errors in 0.2s ==", true, 1, 2, 0},
		{"unittest ok", "test_a (x.T) ... ok\n\n----\nRan 2 tests in 0.001s\n\nOK\n", true, 2, 0, 0},
		{"unittest failed", "Ran 3 tests in 0.01s\n\nFAILED (failures=1, errors=1)\n", true, 1, 2, 0},
		{"unittest skipped", "Ran 3 tests in 0.01s\n\nOK (skipped=1)\n", true, 2, 0, 1},
		{"unittest none", "Ran 0 tests in 0.000s\n\nOK\n", true, 0, 0, 0},
		{"go test -v", "=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    --- FAIL: TestB/x (0.00s)\nFAIL\n", true, 1, 1, 0},
		{"plain", "my runner\n5 passed, 0 failed\n", true, 5, 0, 0},
		{"nothing", "hello\n", false, 0, 0, 0},
	}
	for _, c := range cases {
		got, ok := Summary(c.out)
		assert.Equal(t, c.ok, ok, c.name)
		if ok {
			assert.Equal(t, []int{c.pass, c.fail, c.skip}, []int{got.Passed, got.Failed, got.Skipped}, c.name)
		}
	}
}

func TestCountJUnit(t *testing.T) {
	dir := t.TempDir()
	_, ok := JUnit(dir)
	assert.False(t, ok)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "junit-unit.xml"), []byte(`<?xml version="1.0"?>
<testsuites><testsuite name="a"><testcase name="x"/><testcase name="y"><failure message="boom"/></testcase>
<testcase name="z"><skipped/></testcase></testsuite></testsuites>`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "other.xml"), []byte(`<testsuite><testcase name="k"/></testsuite>`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "not-junit.xml"), []byte(`<html/>`), 0o644))
	c, ok := JUnit(dir)
	require.True(t, ok)
	assert.Equal(t, []int{2, 1, 1}, []int{c.Passed, c.Failed, c.Skipped})
	assert.Contains(t, c.Source, "junit-unit.xml")
}

// The integration test touched a sandbox when its key created one, ran a
// command in it and deleted it; on a real target (no audit) create and
// delete are what can be seen, and the reason says so.
func TestTouchedSandbox(t *testing.T) {
	lc := func(id, method string, status int) wire.Event {
		return wire.Event{SandboxID: id, Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: method, Status: status}}
	}
	ran := wire.Event{SandboxID: "sb", Kind: "command", Command: &wire.Command{Command: "echo hi"}}
	full := command.Saw{Created: []string{"sb"}, Calls: []wire.Event{lc("sb", "POST", 202), lc("sb", "DELETE", 204)}, Events: []wire.Event{ran}}
	ok, why := TouchedSandbox(full, true, "mock")
	assert.True(t, ok, why)
	assert.Contains(t, why, "ran a command in it and deleted it")

	noCmd := full
	noCmd.Events = nil
	ok, why = TouchedSandbox(noCmd, true, "mock")
	assert.False(t, ok)
	assert.Contains(t, why, "sb: no command ran in it")
	ok, why = TouchedSandbox(noCmd, false, "docker")
	assert.True(t, ok)
	assert.Contains(t, why, "target docker: commands inside a sandbox are not seen")

	ok, why = TouchedSandbox(command.Saw{}, true, "mock")
	assert.False(t, ok)
	assert.Equal(t, "the server saw its key create no sandbox", why)
}
