package command

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// TestAuditWitnessSaw: the bundled server's audit, read through its admin
// API, gives a contract command its key's share and, from the keyless calls
// recorded since its cursor, only those its box's guard saw it send, though
// another submission's keyless calls were recorded meanwhile.
func TestAuditWitnessSaw(t *testing.T) {
	t0 := time.Now()
	const mine, theirs = "aaaaaaaaaaaa", "bbbbbbbbbbbb"
	ev := func(d time.Duration, sb, key, method, path string, status int) wire.Event {
		return wire.Event{Time: t0.Add(d), SandboxID: sb, Kind: "lifecycle",
			Lifecycle: &wire.Lifecycle{Method: method, Path: path, Status: status, KeyFingerprint: key}}
	}
	events := []wire.Event{
		ev(10*time.Millisecond, "s1", mine, "POST", "/v1/sandboxes", 202),
		ev(20*time.Millisecond, "t1", theirs, "POST", "/v1/sandboxes", 202),
		ev(30*time.Millisecond, "", "", "POST", "/v1/sandboxes", 401), // the other command's, sent first
		ev(40*time.Millisecond, "", "", "POST", "/v1/sandboxes", 401), // this command's
		ev(50*time.Millisecond, "s1", mine, "DELETE", "/v1/sandboxes/s1", 204),
	}
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.RawQuery)
		if !strings.HasSuffix(r.URL.Path, "/_mock/audit") {
			http.NotFound(w, r)
			return
		}
		var out []wire.Event
		q := r.URL.Query()
		for _, e := range events {
			if k := q.Get("key_fingerprint"); k != "" && e.Lifecycle.KeyFingerprint != k {
				continue
			}
			out = append(out, e)
		}
		_ = json.NewEncoder(w).Encode(osb.AuditLog{Events: out, LastSeq: int64(len(events))})
	}))
	defer srv.Close()
	cl, err := osb.New(strings.TrimPrefix(srv.URL, "http://"), "k", osb.WithAdminToken("admin"))
	require.NoError(t, err)

	rec := &Record{Field: "contract", KeyFP: mine, WantKeyless: true, Boxed: true, Started: t0, Ended: t0.Add(time.Second),
		Witness: AuditWitness{Client: cl}, AuditSince: 7}
	rec.keyless = []KeylessRequest{{Time: t0.Add(35 * time.Millisecond), Method: "POST", Path: "/v1/sandboxes"}}
	var kept []Saw
	rec.Keep = func(s Saw) { kept = append(kept, s) }
	saw, err := rec.Saw(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"s1"}, saw.Created)
	assert.Len(t, saw.Calls, 2)
	require.Len(t, saw.Keyless, 1, "only the keyless call its box sent")
	assert.Equal(t, t0.Add(40*time.Millisecond).UnixNano(), saw.Keyless[0].Time.UnixNano())
	assert.Contains(t, queries, "kind=lifecycle&since=7", "the keyless calls since the command's cursor")
	_, _ = rec.Saw(context.Background())
	assert.Len(t, kept, 1, "read once, kept once")

	srv.Close()
	broken := &Record{Field: "run", KeyFP: mine, Witness: AuditWitness{Client: cl}}
	_, err = broken.Saw(context.Background())
	assert.Error(t, err, "an audit that cannot be read is an error for the check that needs it")
}

// TestProxyWitnessSaw: on a real target the recording proxy is the command's
// own: every call it saw is the command's, its creates make its sandboxes,
// and its keyless calls are those of its window.
func TestProxyWitnessSaw(t *testing.T) {
	t0 := time.Now()
	rec := &Record{Field: "contract", KeyFP: "aaaaaaaaaaaa", WantKeyless: true, Started: t0, Ended: t0.Add(time.Second), Witness: ProxyWitness{}}
	rec.Observed = []observe.Call{
		{Time: t0.Add(time.Millisecond), Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "s1", KeyFingerprint: "aaaaaaaaaaaa", Body: json.RawMessage(`{"timeout":60}`)},
		{Time: t0.Add(2 * time.Millisecond), Method: "POST", Path: "/v1/sandboxes", Status: 401},
		{Time: t0.Add(3 * time.Millisecond), Method: "DELETE", Path: "/v1/sandboxes/s1", Status: 204, SandboxID: "s1", KeyFingerprint: "aaaaaaaaaaaa"},
	}
	saw, err := rec.Saw(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"s1"}, saw.Created)
	assert.JSONEq(t, `{"timeout":60}`, string(saw.CreateBody["s1"]))
	assert.Len(t, saw.Calls, 3)
	require.Len(t, saw.Keyless, 1)
	assert.Equal(t, 401, saw.Keyless[0].Lifecycle.Status)
}

// TestProxyInjectedAnswerIsTheHarnesss: an answer the recording proxy gave
// itself (drill D3's 429 on a real target) is on record as the harness's:
// its event carries a Fault saying who injected it, and no rule blames the
// target for it (rule 5 counts only creates no drill injected), while the
// same answer from the target would be the target's.
func TestProxyInjectedAnswerIsTheHarnesss(t *testing.T) {
	t0 := time.Now()
	injected := observe.Call{Time: t0, Method: "POST", Path: "/v1/sandboxes", Status: 429, KeyFingerprint: "aaaaaaaaaaaa", Injected: observe.CapacityInjected}
	evs := EventsOf([]observe.Call{injected, {Time: t0, Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "s1"}})
	require.Len(t, evs, 2)
	require.NotNil(t, evs[0].Fault)
	assert.Equal(t, InjectedByProxy, evs[0].Fault.Name)
	assert.Equal(t, "429 injected by the harness's recording proxy (OpenSandbox's docker runtime has no pools)", evs[0].Fault.Detail)
	assert.Nil(t, evs[1].Fault, "the target's own answer")

	// Were the proxy ever to inject a server error, it would still be the drill's.
	judge := func(c observe.Call) error {
		rec := &Record{Field: "run", KeyFP: "aaaaaaaaaaaa", Witness: ProxyWitness{}, Res: &subject.Result{ExitCode: 1}}
		rec.Observed = []observe.Call{c}
		return rec.Judge(context.Background())
	}
	for _, status := range []int{429, 503} {
		c := injected
		c.Status = status
		assert.NoError(t, judge(c), "an injected %d is the drill's: the subject's failure is judged", status)
	}
	c := injected
	c.Status, c.Injected = 503, ""
	err := judge(c)
	require.Error(t, err)
	assert.True(t, IsHarnessFault(err), "the target's own 503: %v", err)
}
