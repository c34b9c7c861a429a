package osb

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, s string) *Execution {
	t.Helper()
	ex, err := ParseExecution(strings.NewReader(s))
	require.NoError(t, err)
	return ex
}

func TestSSEBareFramesBlankLineSeparated(t *testing.T) {
	s := `{"type":"init","text":"cmd-1","timestamp":1}` + "\n\n" +
		`{"type":"stdout","text":"hi","timestamp":2}` + "\n\n" +
		`{"type":"stdout","text":"\n","timestamp":3}` + "\n\n" +
		`{"type":"stdout","text":"there","timestamp":3}` + "\n\n" +
		`{"type":"ping","text":"pong","timestamp":4}` + "\n\n" +
		`{"type":"execution_complete","execution_time":12,"timestamp":5}` + "\n\n"
	ex := parse(t, s)
	assert.Equal(t, "cmd-1", ex.ID)
	assert.Equal(t, []string{"hi", "\n", "there"}, ex.Stdout)
	assert.Equal(t, "hi\n\nthere\n", ex.StdoutText())
	require.NotNil(t, ex.ExitCode)
	assert.Equal(t, 0, *ex.ExitCode)
	require.NotNil(t, ex.Complete)
	assert.EqualValues(t, 12, ex.Complete.ExecutionTimeMs)
	assert.Len(t, ex.Events, 6)
	assert.Empty(t, ex.BadFrames)
}

func TestSSEDataPrefixedNewlineSeparatedWithMetaLines(t *testing.T) {
	s := ": comment\r\n" +
		"event: message\n" +
		"id: 7\n" +
		"retry: 1000\n" +
		`data: {"type":"init","text":"x","timestamp":1}` + "\n" +
		`data:{"type":"stderr","text":"oops","timestamp":2}` + "\n" +
		`{"type":"error","error":{"ename":"CommandExecError","evalue":"3","traceback":["exit status 3"]},"timestamp":3}` + "\n"
	ex := parse(t, s)
	assert.Equal(t, "x", ex.ID)
	assert.Equal(t, []string{"oops"}, ex.Stderr)
	require.NotNil(t, ex.ExitCode)
	assert.Equal(t, 3, *ex.ExitCode)
	require.NotNil(t, ex.Error)
	assert.Equal(t, "CommandExecError", ex.Error.EName)
	assert.Nil(t, ex.Complete)
}

func TestSSEMultiLineDataAndJunk(t *testing.T) {
	s := "data: {\"type\":\"stdout\",\n" +
		"data: \"text\":\"joined\",\"timestamp\":1}\n\n" +
		"not json at all\n\n" +
		"garbage\n" +
		`{"type":"stdout","text":"after","timestamp":2}` + "\n"
	ex := parse(t, s)
	assert.Equal(t, []string{"joined", "after"}, ex.Stdout)
	assert.Equal(t, []string{"not json at all", "garbage"}, ex.BadFrames)
	assert.Nil(t, ex.ExitCode, "no terminal event: exit code unknown")
}

func TestSSEKilledAndSpawnFailure(t *testing.T) {
	ex := parse(t, `{"type":"init","text":"a","timestamp":1}`+"\n\n"+
		`{"type":"error","error":{"ename":"CommandExecError","evalue":"-1","traceback":["signal: killed"]},"timestamp":2}`+"\n\n")
	require.NotNil(t, ex.ExitCode)
	assert.Equal(t, -1, *ex.ExitCode)

	ex = parse(t, `{"type":"init","text":"a","timestamp":1}`+"\n\n"+
		`{"type":"error","error":{"ename":"CommandExecError","evalue":"fork/exec: no such file"},"timestamp":2}`+"\n\n")
	assert.Nil(t, ex.ExitCode, "a non-numeric evalue is not an exit code")
	require.NotNil(t, ex.Error)
	assert.Contains(t, ex.Error.EValue, "no such file")
}

func TestSSEMissingTimestampFlagged(t *testing.T) {
	ex := parse(t, `{"type":"stdout","text":"a"}`+"\n\n"+`{"type":"stdout","text":"b","timestamp":1}`+"\n\n")
	require.Len(t, ex.Events, 2)
	assert.False(t, ex.Events[0].HasTimestamp)
	assert.True(t, ex.Events[1].HasTimestamp)
}

func TestSSEBackground(t *testing.T) {
	ex := parse(t, `{"type":"init","text":"bg","timestamp":1}`+"\n\n"+`{"type":"execution_complete","timestamp":2}`+"\n\n")
	assert.Equal(t, "bg", ex.ID)
	require.NotNil(t, ex.ExitCode) // the SDK rule: complete → 0; callers of background runs use CommandStatus
}
