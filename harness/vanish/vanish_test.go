package vanish

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

func ev(at time.Time, d time.Duration, e wire.Event) wire.Event {
	e.Time, e.SandboxID = at.Add(d), "sb-1"
	return e
}

// The symptom is the first failed answers for the drill's own sandbox; a
// 5xx among them is unintended (the platform's).
func TestJudge(t *testing.T) {
	t.Run("a real target: the recording proxy's answers", func(t *testing.T) {
		at := time.Now().Add(-time.Minute).Add(2 * time.Second)
		calls := []command.Call{
			{Time: at.Add(-time.Second), Method: "POST", Path: "/files/upload", Status: 200, SandboxID: "sb-1", Port: 44772},
			{Time: at.Add(time.Second), Method: "POST", Path: "/command", Status: 404, SandboxID: "sb-1", Port: 44772},
			{Time: at.Add(2 * time.Second), Method: "GET", Path: "/v1/sandboxes/sb-2", Status: 500, SandboxID: "sb-2"},
		}
		sym := Judge(AnswersFromCalls(calls, "sb-1", at))
		assert.Nil(t, sym.Unintended, "another sandbox's answers are not this drill's")
		assert.Equal(t, "execd POST /command → 404", sym.String())
		calls[1].Status, calls[1].Answer = 500, `{"code":"DOCKER::SANDBOX_DELETE_FAILED"}`
		sym = Judge(AnswersFromCalls(calls, "sb-1", at))
		require.NotNil(t, sym.Unintended)
		assert.Equal(t, `execd POST /command → 500 {"code":"DOCKER::SANDBOX_DELETE_FAILED"}`, sym.Unintended.String())
	})

	t.Run("successes before the removal reached the sandbox are not the symptom", func(t *testing.T) {
		at := time.Now()
		sym := Judge(AnswersFromAudit([]wire.Event{
			ev(at, time.Millisecond, wire.Event{Kind: "command", Command: &wire.Command{Command: "ls", ExitCode: new(int)}}),
			ev(at, 2*time.Millisecond, wire.Event{Kind: "file", File: &wire.File{Op: "final-manifest", Path: "/workspace/a"}}),
		}, "sb-1", at))
		assert.Empty(t, sym.First)
		assert.Equal(t, "no failed answer to a call for the sandbox was recorded after the fault", sym.String())
	})
}
