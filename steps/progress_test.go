package steps

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// fakeProgress plays an observation source: each poll reveals the next
// batch of calls (then the last batch again, as a cumulative source does).
type fakeProgress struct {
	mu      sync.Mutex
	batches [][]command.ProgressCall
	polls   int
}

func (f *fakeProgress) Poll(context.Context) ([]command.ProgressCall, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := min(f.polls, len(f.batches)-1)
	f.polls++
	return f.batches[i], nil
}

func (f *fakeProgress) pollCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls
}

// fire runs the trigger on src until it acts or 2 s pass; it returns the
// sandbox acted on ("" for none) and the poll at which it acted.
func fire(t *testing.T, src *fakeProgress) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	got, at := "", -1
	command.WhenProgressed(ctx, src, time.Millisecond, func(id, _ string) { got, at = id, src.pollCount() })
	return got, at
}

func TestWhenProgressedFiresOnFirstSuccessfulCallOfOwnSandbox(t *testing.T) {
	created := command.ProgressCall{SandboxID: "sb-1", Created: true}
	progress := command.ProgressCall{SandboxID: "sb-1", Progress: true}
	other := command.ProgressCall{SandboxID: "sb-other", Progress: true} // a sandbox the run did not create

	// Not at the create, not on another key's sandbox: at the progress call.
	src := &fakeProgress{batches: [][]command.ProgressCall{{created}, {created, other}, {created, other}, {created, other, progress}}}
	id, at := fire(t, src)
	assert.Equal(t, "sb-1", id)
	assert.Equal(t, 4, at, "fired at the poll that first showed progress")

	// The progress may be seen before the create (two sources, two clocks).
	src = &fakeProgress{batches: [][]command.ProgressCall{{progress}, {progress, created}}}
	id, at = fire(t, src)
	assert.Equal(t, "sb-1", id)
	assert.Equal(t, 2, at)

	// The first sandbox to progress wins, in the order progress was seen.
	src = &fakeProgress{batches: [][]command.ProgressCall{{{SandboxID: "sb-2", Created: true}, created,
		{SandboxID: "sb-2", Progress: true}, progress}}}
	id, _ = fire(t, src)
	assert.Equal(t, "sb-2", id)

	// Without progress nothing fires: the run ends, the drill is not measured.
	src = &fakeProgress{batches: [][]command.ProgressCall{{created, other}}}
	id, _ = fire(t, src)
	assert.Equal(t, "", id)
}

func TestAuditCallsProgress(t *testing.T) {
	zero, one := 0, 1
	lc := func(method, path string, status int, id, key string) wire.Event {
		return wire.Event{Kind: "lifecycle", SandboxID: id, Lifecycle: &wire.Lifecycle{Method: method, Path: path, Status: status, KeyFingerprint: key}}
	}
	events := []wire.Event{
		lc("POST", "/v1/sandboxes", 202, "sb-1", "k1"),
		lc("POST", "/v1/sandboxes", 202, "sb-x", "k2"),
		{Kind: "command", SandboxID: "sb-1", Command: &wire.Command{}}, // running: no exit code yet
		{Kind: "file", SandboxID: "sb-1", File: &wire.File{Op: "upload", Path: "/workspace/a.csv", Status: 400}},
		{Kind: "file", SandboxID: "sb-1", File: &wire.File{Op: "upload", Path: "/workspace/a.csv", Status: 200}},
		{Kind: "command", SandboxID: "sb-1", Command: &wire.Command{ExitCode: &one}},
		{Kind: "command", SandboxID: "sb-x", Command: &wire.Command{ExitCode: &zero}},
	}
	calls := command.AuditCalls(events, "k1")
	var created, progress []string
	for _, c := range calls {
		if c.Created {
			created = append(created, c.SandboxID)
		}
		if c.Progress {
			progress = append(progress, c.SandboxID+" "+c.What)
		}
	}
	assert.Equal(t, []string{"sb-1"}, created, "only the key's creates")
	assert.Equal(t, []string{
		"sb-1 file upload /workspace/a.csv → 200",
		"sb-1 command finished (exit 1)",
		"sb-x command finished (exit 0)", // progress of a sandbox not created by k1: ignored by the trigger
	}, progress)
}

func TestObservedCallClassifiesProxyRecords(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		call              observe.Call
		created, progress bool
	}{
		{observe.Call{Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "s"}, true, false},
		{observe.Call{Method: "POST", Path: "/v1/sandboxes", Status: 429}, false, false},
		{observe.Call{Method: "GET", Path: "/v1/sandboxes/s", Status: 200, SandboxID: "s"}, false, false},
		{observe.Call{Method: "GET", Path: "/v1/sandboxes/s/endpoints/44772", Status: 200, SandboxID: "s"}, false, false},
		{observe.Call{Method: "POST", Path: "/command", Status: 200, SandboxID: "s"}, false, true},
		{observe.Call{Method: "POST", Path: "/files/upload", Status: 200, SandboxID: "s"}, false, true},
		{observe.Call{Method: "GET", Path: "/files/download?path=/workspace/x", Status: 200, SandboxID: "s"}, false, true},
		{observe.Call{Method: "POST", Path: "/v1/sandboxes/s/proxy/44772/command", Status: 200, SandboxID: "s"}, false, true},
		{observe.Call{Method: "GET", Path: "/v1/sandboxes/s/proxy/8080/command", Status: 200, SandboxID: "s"}, false, false}, // not execd's port
		{observe.Call{Method: "GET", Path: "/ping", Status: 200, SandboxID: "s"}, false, false},
		{observe.Call{Method: "POST", Path: "/command", Status: 502, SandboxID: "s"}, false, false},
		{observe.Call{Method: "POST", Path: "/command", Status: 200}, false, false}, // no sandbox: not attributable
	} {
		tc.call.Time = now
		pc := command.ObservedCall(tc.call)
		assert.Equal(t, tc.created, pc.Created, "%s %s created", tc.call.Method, tc.call.Path)
		assert.Equal(t, tc.progress, pc.Progress, "%s %s progress", tc.call.Method, tc.call.Path)
	}
}

func TestExecdCallsAfterCountsTheSameObservations(t *testing.T) {
	t0 := time.Now()
	calls := []observe.Call{
		{Time: t0.Add(-time.Second), Method: "POST", Path: "/command", Status: 200, SandboxID: "s"},
		{Time: t0, Method: "POST", Path: "/command", Status: 502, SandboxID: "s"},
		{Time: t0.Add(time.Second), Method: "GET", Path: "/v1/sandboxes/s/proxy/44772/ping", Status: 502, SandboxID: "s"},
		{Time: t0.Add(time.Second), Method: "GET", Path: "/v1/sandboxes/s", Status: 404, SandboxID: "s"}, // lifecycle: counted elsewhere
		{Time: t0.Add(time.Second), Method: "POST", Path: "/command", Status: 200, SandboxID: "other"},
	}
	n, what := command.ExecdCallsAfter(calls, "s", t0)
	require.Equal(t, 2, n, "%v", what)
	assert.Equal(t, "execd POST /command → 502", what[0])
}

func TestWhenProgressedPassesTheTimingCall(t *testing.T) {
	src := &fakeProgress{batches: [][]command.ProgressCall{{
		{SandboxID: "sb-1", Created: true},
		{SandboxID: "sb-1", Progress: true, What: "file upload /workspace/sales.csv → 200"},
		{SandboxID: "sb-1", Progress: true, What: "command finished (exit 0)"},
	}}}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var what string
	command.WhenProgressed(ctx, src, time.Millisecond, func(_, w string) { what = w })
	assert.Equal(t, "file upload /workspace/sales.csv → 200", what, "the first progress call, named in the drill's note")
}

// On a real target a run whose execd calls the proxy never saw is not
// measured with that reason; once it saw one, the reason is the subject's.
func TestProgressUnobservedOnRealTarget(t *testing.T) {
	e := &Env{}
	e.opt.Target.Kind = "real"
	r := &subjectRun{}
	r.Witness = command.ProxyWitness{}
	r.Observed = []observe.Call{{Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "s"}}
	why := e.progressUnobserved(r)
	assert.Contains(t, why, "the recording proxy saw none of the subject's execd or file calls")
	assert.Contains(t, why, "target real")
	r.Observed = append(r.Observed, observe.Call{Method: "POST", Path: "/command", Status: 502, SandboxID: "s"})
	assert.Equal(t, "", e.progressUnobserved(r), "an execd call was seen: the subject ended before progressing")
}

func TestObservedCallsDedup(t *testing.T) {
	t0 := time.Now()
	c := observe.Call{Time: t0, Method: "POST", Path: "/sandboxes/s/proxy/44772/command", Status: 200, SandboxID: "s"}
	r := &subjectRun{}
	r.Observed = []observe.Call{c, c, {Time: t0, Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "s"}}
	r.EndpointCalls = []observe.Call{c}
	got := observedCalls(r)
	require.Len(t, got, 2, "one exchange recorded twice (or kept twice) counts once")
	n, _ := command.ExecdCallsAfter(got, "s", t0)
	assert.Equal(t, 1, n)
}

// TestProgressSeenWhileACommandStreams: on a real target the watcher reads
// the recording proxy while the subject's next call is still in flight (a
// command streaming for seconds): the upload's 200 fires the drill at once,
// not once the command has ended. Reading the proxy's Calls or
// EndpointCalls waits for calls in flight, which delayed D5's kill until the
// subject had finished and removed its sandbox (TestDockerCalibration).
func TestProgressSeenWhileACommandStreams(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v1/sandboxes":
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"id":"s1","status":{"state":"Running"}}`))
		case strings.HasSuffix(r.URL.Path, "/files/upload"):
			w.WriteHeader(http.StatusOK)
		case strings.HasSuffix(r.URL.Path, "/command"):
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("data: {}\n\n"))
			_ = http.NewResponseController(w).Flush()
			<-release // the command runs until the test ends
		}
	}))
	defer up.Close()
	defer close(release)
	p, err := observe.Start(up.URL)
	require.NoError(t, err)
	defer p.Close()
	r := &subjectRun{}
	r.Proxy = p
	post := func(path string) {
		res, err := http.Post("http://"+p.Domain()+path, "application/json", strings.NewReader(`{}`))
		require.NoError(t, err)
		res.Body.Close()
	}
	post("/v1/sandboxes")
	post("/sandboxes/s1/proxy/44772/files/upload")
	go func() { // the command streams on
		res, err := http.Post("http://"+p.Domain()+"/sandboxes/s1/proxy/44772/command", "application/json", strings.NewReader(`{}`))
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}()
	time.Sleep(100 * time.Millisecond) // the command is in flight
	fired := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	command.WhenProgressed(ctx, command.ProxyProgress(func() []observe.Call { return observedCalls(r) }), 20*time.Millisecond,
		func(id, what string) { fired <- id + " " + what })
	require.Len(t, fired, 1, "the drill fired")
	assert.Equal(t, "s1 POST /sandboxes/s1/proxy/44772/files/upload → 200", <-fired)
	assert.Less(t, time.Since(start), time.Second, "at once, while the command still streams")
}
