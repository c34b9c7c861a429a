package dockertarget

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeFateEngine is engineView with set answers.
type fakeFateEngine struct {
	cs       []containerState
	csErr    error
	evs      []engineEvent
	evErr    error
	start    time.Time
	startSet bool
}

func (f fakeFateEngine) containers(context.Context, string) ([]containerState, error) {
	return f.cs, f.csErr
}
func (f fakeFateEngine) events(context.Context, string, time.Time) ([]engineEvent, error) {
	return f.evs, f.evErr
}
func (f fakeFateEngine) started() (time.Time, bool) { return f.start, f.startSet }

// TestFateSaysWhatTheEngineSaid: SandboxFate asks the engine why a
// sandbox's container stopped and says it in the engine's own terms, for
// each way a machine stops one (a signal, the OOM killer, the engine's own
// restart, a removal outside the control plane), and tells those from a
// running container and from a DELETE through the control plane (the key's
// or a drill's: the log line is there for the judge to weigh).
func TestFateSaysWhatTheEngineSaid(t *testing.T) {
	const id = "ba9c838a-bc8d-415d-bde6-4811f3df67a3"
	t0 := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC) // the control plane started
	started := t0.Add(10 * time.Second)
	finished := t0.Add(14*time.Second + 250*time.Millisecond)
	deleteLine := `INFO:     127.0.0.1:50412 - "DELETE /v1/sandboxes/` + id + ` HTTP/1.1" 204`
	names := `INFO:     127.0.0.1:50400 - "POST /v1/sandboxes HTTP/1.1" 202 ` + id
	ev := func(d time.Duration, action string, attrs map[string]string) engineEvent {
		return engineEvent{Time: t0.Add(d), Action: action, Attrs: attrs}
	}
	for _, tc := range []struct {
		name      string
		eng       fakeFateEngine
		log       string
		stopped   bool
		gone      bool
		deletes   int
		at        time.Time
		said      []string
		notSaid   []string
		wantError bool
	}{
		{name: "running", eng: fakeFateEngine{cs: []containerState{{Name: "sandbox-x", Running: true, Status: "running", StartedAt: started}}}, log: names},
		{name: "docker kill", eng: fakeFateEngine{cs: []containerState{{Name: "sandbox-x", Status: "exited", ExitCode: 137, StartedAt: started, FinishedAt: finished}},
			evs: []engineEvent{ev(14*time.Second, "kill", map[string]string{"signal": "9", "name": "sandbox-x"}), ev(14250*time.Millisecond, "die", map[string]string{"exitCode": "137", "name": "sandbox-x"})}},
			log: names, stopped: true, at: finished,
			said:    []string{"container sandbox-x is exited, killed by SIGKILL (exit code 137), finished at 05:00:14.250", "its events: kill (SIGKILL) of sandbox-x at 05:00:14.000, die (exit code 137) of sandbox-x at 05:00:14.250"},
			notSaid: []string{"OOM", "restarted"}},
		{name: "OOM kill", eng: fakeFateEngine{cs: []containerState{{Name: "sandbox-x", Status: "exited", OOMKilled: true, ExitCode: 137, StartedAt: started, FinishedAt: finished}},
			evs: []engineEvent{ev(14*time.Second, "oom", map[string]string{"name": "sandbox-x"}), ev(14250*time.Millisecond, "die", map[string]string{"exitCode": "137"})}},
			log: names, stopped: true, at: finished,
			said: []string{"OOM-killed (State.OOMKilled true, exit code 137)", "oom (the kernel's OOM killer) of sandbox-x at 05:00:14.000"}},
		{name: "engine restart", eng: fakeFateEngine{cs: []containerState{{Name: "sandbox-x", Status: "exited", ExitCode: 255, Error: "", StartedAt: started, FinishedAt: finished}},
			start: t0.Add(20 * time.Second), startSet: true},
			log: names, stopped: true, at: finished,
			said: []string{"container sandbox-x is exited (exit code 255)", "the engine itself restarted at 05:00:20.000, after sandbox-x started at 05:00:10.000"}},
		{name: "State.Error", eng: fakeFateEngine{cs: []containerState{{Name: "sandbox-x", Status: "dead", ExitCode: 128, Error: "shim disconnected", StartedAt: started, FinishedAt: finished}}},
			log: names, stopped: true, at: finished, said: []string{`State.Error "shim disconnected"`}},
		{name: "removed outside the control plane", eng: fakeFateEngine{
			evs: []engineEvent{ev(14*time.Second, "kill", map[string]string{"signal": "9"}), ev(14250*time.Millisecond, "die", map[string]string{"exitCode": "137"}), ev(14300*time.Millisecond, "destroy", nil)}},
			log: names, gone: true, stopped: true, at: finished, said: []string{"kill (SIGKILL) at 05:00:14.000, die (exit code 137) at 05:00:14.250, destroy at 05:00:14.300"}},
		{name: "removed, the engine's events lost", eng: fakeFateEngine{}, log: names, gone: true,
			said: []string{"no event of the sandbox since 05:00:00.000"}},
		{name: "removed, events unreadable", eng: fakeFateEngine{evErr: errors.New("connection refused")}, log: names, gone: true,
			said: []string{"its events could not be read (connection refused)"}},
		{name: "removed after an engine restart", eng: fakeFateEngine{start: t0.Add(20 * time.Second), startSet: true}, log: names, gone: true,
			said: []string{"the engine itself restarted at 05:00:20.000, after the control plane started at 05:00:00.000"}},
		{name: "deleted through the control plane (the key's or a drill's)", eng: fakeFateEngine{
			evs: []engineEvent{ev(14*time.Second, "kill", map[string]string{"signal": "15"}), ev(14250*time.Millisecond, "die", map[string]string{"exitCode": "143"}), ev(14300*time.Millisecond, "destroy", nil)}},
			log: names + "\n" + deleteLine, gone: true, stopped: true, at: finished, deletes: 1, said: []string{"kill (SIGTERM)"}},
		{name: "the engine cannot be asked", eng: fakeFateEngine{csErr: errors.New("no such host")}, log: names, wantError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := fateOf(context.Background(), tc.eng, tc.log, id, t0)
			if tc.wantError {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.stopped, f.Stopped, "stopped")
			assert.Equal(t, tc.gone, f.ContainerGone, "gone")
			assert.Equal(t, tc.at, f.StoppedAt, "when")
			assert.Len(t, f.Deletes, tc.deletes)
			assert.Positive(t, f.LogNames)
			for _, s := range tc.said {
				assert.Contains(t, f.EngineSaid, s)
			}
			for _, s := range tc.notSaid {
				assert.NotContains(t, f.EngineSaid, s)
			}
			if !tc.stopped && !tc.gone {
				assert.Empty(t, f.EngineSaid, "a running container has nothing to explain")
			}
		})
	}
}

// TestDecodeEventsReadsTheEnginesStream: the engine's /events stream (one
// JSON object after another, as dockerd sends it) gives each event's
// action, time and attributes.
func TestDecodeEventsReadsTheEnginesStream(t *testing.T) {
	stream := `{"status":"kill","id":"abc","Type":"container","Action":"kill","Actor":{"ID":"abc","Attributes":{"name":"sb","signal":"9"}},"scope":"local","time":1764651614,"timeNano":1764651614000000000}
{"Type":"container","Action":"die","Actor":{"ID":"abc","Attributes":{"exitCode":"137","name":"sb"}},"time":1764651614,"timeNano":1764651614250000000}
{"Type":"container","Action":"exec_start: sh -c true","Actor":{"ID":"abc","Attributes":{}},"timeNano":1764651615000000000}
`
	evs, err := decodeEvents(strings.NewReader(stream))
	require.NoError(t, err)
	require.Len(t, evs, 3)
	assert.Equal(t, "kill", evs[0].Action)
	assert.Equal(t, "9", evs[0].Attrs["signal"])
	assert.Equal(t, "die", evs[1].Action)
	assert.Equal(t, time.Unix(1764651614, 250000000).UTC(), evs[1].Time)
	assert.Equal(t, "exec_start", evs[2].Action)
	_, err = decodeEvents(strings.NewReader("<html>"))
	assert.Error(t, err)
}

// TestProcessStartedReadsProc: the engine's start time is read from /proc
// (this test's own process stands in for dockerd).
func TestProcessStartedReadsProc(t *testing.T) {
	at, ok := processStarted(strconv.Itoa(os.Getpid()))
	require.True(t, ok, "this process's start time")
	assert.False(t, at.After(time.Now()), "started before now: %s", at)
	assert.Less(t, time.Since(at), 10*time.Minute, "a test process started moments ago: %s", at)
	_, ok = processStarted("self")
	assert.False(t, ok, "not a pid")
	_, ok = processStarted("999999999")
	assert.False(t, ok, "no such process")
}
