package steps

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/harness/vanish"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/harness/summary"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// d2Scenario is a D2 run whose summary reports class: on the bundled server
// its audit is events (its Witness a record of them; a test may replace
// it), on a real target what its recording proxy observed.
func d2Scenario(t *testing.T, target core.Target, events []wire.Event, observed []command.Call, class string) (context.Context, *scenario, time.Time) {
	t.Helper()
	e, _ := blameEnv(t, target)
	start := time.Now().Add(-time.Minute)
	at := start.Add(2 * time.Second)
	s := &scenario{env: e, name: "The sandbox disappears mid-run", tags: []string{"@drill:D2"}, ids: []string{"D2"},
		drill: &drill{Name: d2DrillName}}
	s.run = &subjectRun{key: "d2", launch: launch{Started: start, Res: &subject.Result{ExitCode: 1, Duration: 10 * time.Second}, Observed: observed},
		faultSandbox: "sb-1", faultAt: at, faultCause: "POST /files/upload → 200",
		sum: &summary.Summary{Error: &summary.Error{Class: class, Message: "upload failed"}}}
	s.run.Witness = command.ProxyWitness{}
	if e.mock() {
		s.run.Witness = recordedEvents(events)
	}
	return context.WithValue(context.Background(), scenarioKey{}, s), s, at
}

var bundled = core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9", APIKey: "k-platform", AdminToken: "adm"}

func ev(at time.Time, d time.Duration, e wire.Event) wire.Event {
	e.Time, e.SandboxID = at.Add(d), "sb-1"
	return e
}

// TestD2JudgedOnWhatTheSubjectSaw: the 502 of issue 27 (the grader's own
// server answering while the sandbox was half removed) makes D2 a harness
// error naming that answer, never failed; a 404 or a reset connection is the
// course's symptom, and the verdict shows it; a wrong class then fails with
// the symptom in its reason.
func TestD2JudgedOnWhatTheSubjectSaw(t *testing.T) {
	lifecycle404 := func(at time.Time) []wire.Event {
		return []wire.Event{
			ev(at, -time.Second, wire.Event{Kind: "lifecycle", Lifecycle: &wire.Lifecycle{Method: "GET", Path: "/v1/sandboxes/sb-1", Status: 200}}),
			ev(at, 10*time.Millisecond, wire.Event{Kind: "file", File: &wire.File{Op: "upload", Path: "/workspace/a.py", Status: 200}}),
			ev(at, 300*time.Millisecond, wire.Event{Kind: "lifecycle", Lifecycle: &wire.Lifecycle{Method: "GET", Path: "/v1/sandboxes/sb-1", Status: 404}}),
		}
	}

	t.Run("502 of the grader's server is a harness error", func(t *testing.T) {
		events := []wire.Event{
			ev(time.Time{}, 0, wire.Event{Kind: "command", Command: &wire.Command{Command: "python3 /workspace/fetch_data.py",
				Error: `status 502: {"code":"UNKNOWN","message":"execd of sandbox sb-1 is unreachable: read unix @->/proc/self/fd/32/execd.sock: connection reset"}`}}),
			ev(time.Time{}, 0, wire.Event{Kind: vanish.ExecdAfterRemovalKind, ExecdAfterRemoval: &wire.AfterRemoval{Method: "GET", Path: "/ping"}}),
		}
		ctx, _, at := d2Scenario(t, bundled, nil, nil, "platform_error")
		for i := range events {
			events[i].Time = at.Add(time.Duration(50+30*i) * time.Millisecond)
		}
		state(ctx).run.Witness = recordedEvents(events)
		err := sandboxDisappeared(ctx)
		require.Error(t, err)
		assert.True(t, isHarnessFault(err), "a 5xx of the grader's own server is never the subject's failure: %v", err)
		assert.Contains(t, err.Error(), "502")
		assert.Contains(t, err.Error(), "is unreachable")
		assert.Contains(t, err.Error(), "a symptom the drill did not intend")

		s := state(ctx)
		require.Len(t, s.evidence, 1, "what the subject saw is evidence of the verdict")
		b, rerr := os.ReadFile(filepath.Join(s.env.opt.BundleDir, s.evidence[0]))
		require.NoError(t, rerr)
		var doc struct {
			Unintended string `json:"unintended"`
			Answers    []struct {
				Status int `json:"status"`
			} `json:"answers"`
		}
		require.NoError(t, json.Unmarshal(b, &doc))
		assert.Contains(t, doc.Unintended, "→ 502")
		require.Len(t, doc.Answers, 2)
		assert.Equal(t, []int{502, 0}, []int{doc.Answers[0].Status, doc.Answers[1].Status})
	})

	t.Run("404 is the course's symptom and shown", func(t *testing.T) {
		ctx, s, at := d2Scenario(t, bundled, nil, nil, "sandbox_gone")
		s.run.Witness = recordedEvents(lifecycle404(at))
		require.NoError(t, sandboxDisappeared(ctx))
		assert.Contains(t, s.notes, "what the subject saw after the disappearance (first failed answers for the sandbox): GET /v1/sandboxes/sb-1 → 404")
		require.NoError(t, errorClassIs(ctx, "sandbox_gone"))
	})

	t.Run("a reset connection is the course's symptom", func(t *testing.T) {
		ctx, s, at := d2Scenario(t, bundled, nil, nil, "sandbox_gone")
		s.run.Witness = recordedEvents([]wire.Event{
			ev(at, 20*time.Millisecond, wire.Event{Kind: vanish.ExecdAfterRemovalKind, ExecdAfterRemoval: &wire.AfterRemoval{Method: "POST", Path: "/files/upload", Note: "in flight when the sandbox was removed"}}),
			ev(at, 30*time.Millisecond, wire.Event{Kind: "command", Command: &wire.Command{Command: "python3 x.py", Error: "killed: sandbox removed (expired by admin)"}}),
		})
		require.NoError(t, sandboxDisappeared(ctx))
		assert.Contains(t, s.notes, "what the subject saw after the disappearance (first failed answers for the sandbox): "+
			"execd POST /files/upload → connection failure (connection reset: in flight when the sandbox was removed); "+
			`execd command "python3 x.py" → connection failure (its stream was cut: killed: sandbox removed (expired by admin))`)
	})

	t.Run("a wrong class fails with the symptom in its reason", func(t *testing.T) {
		ctx, s, at := d2Scenario(t, bundled, nil, nil, "platform_error")
		s.run.Witness = recordedEvents(lifecycle404(at))
		require.NoError(t, sandboxDisappeared(ctx))
		err := errorClassIs(ctx, "sandbox_gone")
		require.Error(t, err)
		assert.False(t, isHarnessFault(err))
		assert.Contains(t, err.Error(), `the drill expects "sandbox_gone"; after the disappearance the subject saw: GET /v1/sandboxes/sb-1 → 404`)
	})

}

// A call the removal cut while it ran was made before the disappearance: D2
// does not count it among the calls to the vanished sandbox.
func TestD2CountLeavesOutTheCallTheRemovalCut(t *testing.T) {
	after := func(at time.Time, n int, inFlight bool) []wire.Event {
		var out []wire.Event
		if inFlight {
			out = append(out, ev(at, time.Millisecond, wire.Event{Kind: vanish.ExecdAfterRemovalKind,
				ExecdAfterRemoval: &wire.AfterRemoval{Method: "POST", Path: "/command", Note: wire.AfterRemovalInFlight}}))
		}
		for i := range n {
			out = append(out, ev(at, time.Duration(10+i)*time.Millisecond, wire.Event{Kind: vanish.ExecdAfterRemovalKind,
				ExecdAfterRemoval: &wire.AfterRemoval{Method: "GET", Path: "/ping"}}))
		}
		return out
	}
	ctx, s, at := d2Scenario(t, bundled, nil, nil, "sandbox_gone")
	s.run.Witness = recordedEvents(after(at, 3, true))
	require.NoError(t, boundedCallsAfterVanish(ctx, 3), "3 calls after the disappearance, plus the one it cut")

	ctx, s, at = d2Scenario(t, bundled, nil, nil, "sandbox_gone")
	s.run.Witness = recordedEvents(after(at, 4, true))
	err := boundedCallsAfterVanish(ctx, 3)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "called the vanished sandbox 4 times")
}

// recordedEvents is a Witness that saw events of a run's sandboxes.
func recordedEvents(events []wire.Event) command.Witness {
	return command.Recorded{What: command.Saw{Events: events}}
}
