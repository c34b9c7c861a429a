package residual

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// The reap command's own DELETE → 204 of each residual sandbox, before its
// expiry, is a reap; a sandbox it did not delete, or deleted late, fails.
func TestReaped(t *testing.T) {
	t0 := time.Now()
	del := func(id string, at time.Time, status int) wire.Event {
		return wire.Event{Time: at, SandboxID: id, Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: "DELETE", Status: status}}
	}
	expiry := map[string]time.Time{"a": t0.Add(time.Minute), "b": t0.Add(time.Second)}
	note, err := Reaped(command.Saw{Calls: []wire.Event{del("a", t0, 204), del("b", t0, 204)}}, []string{"a", "b"}, expiry, 0, "run-1")
	require.NoError(t, err)
	assert.Contains(t, note, "deleted 2 residual sandbox(es) of the killed run (a, b)")

	_, err = Reaped(command.Saw{Calls: []wire.Event{del("a", t0, 204), del("b", t0, 500)}}, []string{"a", "b"}, expiry, 1, "run-1")
	assert.ErrorContains(t, err, "did not delete residual sandbox(es) b of run run-1")
	assert.False(t, command.IsHarnessFault(err))

	_, err = Reaped(command.Saw{Calls: []wire.Event{del("a", t0, 204), del("b", t0.Add(2*time.Second), 204)}}, []string{"a", "b"}, expiry, 0, "run-1")
	assert.ErrorContains(t, err, "deleted b only after its expiry")
}
