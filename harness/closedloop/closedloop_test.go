package closedloop

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// On the bundled server the loop is read from the audit: a command that
// finished, an upload and a download; what is missing is named.
func TestRoundTripFromTheAudit(t *testing.T) {
	code := 0
	saw := command.Saw{Created: []string{"sb"}, Events: []wire.Event{
		{Kind: "command", Command: &wire.Command{Command: "ls", ExitCode: &code}},
		{Kind: "command", Command: &wire.Command{Command: "sleep 99"}}, // never finished
		{Kind: "file", File: &wire.File{Op: "upload"}},
	}}
	cmds, ups, downs := RoundTrip(saw, nil, true)
	assert.Equal(t, [3]int{1, 1, 0}, [3]int{cmds, ups, downs})
	assert.Equal(t, []string{"read no file back"}, Missing(cmds, ups, downs))
	assert.Empty(t, Missing(1, 1, 1))
	assert.Len(t, Missing(0, 0, 0), 3)
}

// A sandbox is destroyed by the run's key when its DELETE answered 204, and
// confirmed gone when a call of the key answered 404 afterwards.
func TestDestroyedByKey(t *testing.T) {
	t0 := time.Now()
	call := func(d time.Duration, id, method string, status int) wire.Event {
		return wire.Event{Time: t0.Add(d), SandboxID: id, Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: method, Status: status}}
	}
	saw := command.Saw{Calls: []wire.Event{
		call(0, "a", "GET", 404), // before the delete: not a confirmation
		call(time.Second, "a", "DELETE", 204),
		call(2*time.Second, "b", "DELETE", 204),
		call(3*time.Second, "b", "GET", 404),
		call(4*time.Second, "c", "DELETE", 500),
	}}
	for id, want := range map[string][2]bool{"a": {true, false}, "b": {true, true}, "c": {false, false}, "d": {false, false}} {
		d, c := DestroyedByKey(saw, id)
		assert.Equal(t, want, [2]bool{d, c}, id)
	}
}

// AuditErr: the query's own error, no answer, or the status and the head of
// the body of an answer that did not decode; nil for a decoded one.
func TestAuditErr(t *testing.T) {
	assert.EqualError(t, AuditErr((*osb.Result[osb.Empty])(nil), errors.New("dial refused")), "dial refused")
	assert.EqualError(t, AuditErr((*osb.Result[osb.Empty])(nil), nil), "no answer")
	res := &osb.Result[osb.Empty]{Meta: osb.Meta{Status: 502, Body: []byte(strings.Repeat("x", 250))}}
	assert.EqualError(t, AuditErr(res, nil), "answered 502: "+strings.Repeat("x", 200)+"…")
	res.Decoded = true
	assert.NoError(t, AuditErr(res, nil))
}
