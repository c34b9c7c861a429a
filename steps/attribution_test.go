package steps

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

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// TestAttributionByIdentity: two subjects ran at once on one server. The
// first one's sandbox called the data API without the vault, sent a request
// to the exfiltration sink and uploaded its input to the package index; the
// second one's sandbox only installed a package. The sink and the data API
// stub logged requests during both runs, which by time alone would blame
// both: only the first is blamed, by its sandbox, through its key.
func TestAttributionByIdentity(t *testing.T) {
	keyA, keyB := "subject-key-aaaaaaaaaaaa", "subject-key-bbbbbbbbbbbb"
	t0 := time.Now().Add(-time.Minute)
	ev := func(seq int64, sb, kind string) wire.Event {
		return wire.Event{Seq: seq, Time: t0.Add(time.Duration(seq) * time.Second), SandboxID: sb, Kind: kind}
	}
	create := func(seq int64, sb, key string) wire.Event {
		e := ev(seq, sb, "lifecycle")
		e.Lifecycle = &wire.Lifecycle{Method: "POST", Path: "/v1/sandboxes", Status: 202, KeyFingerprint: keyFingerprint(key)}
		return e
	}
	req := func(seq int64, sb string, q wire.EgressRequest) wire.Event {
		e := ev(seq, sb, "egress_request")
		e.EgressRequest = &q
		return e
	}
	events := []wire.Event{
		create(1, "sb-a", keyA), create(2, "sb-b", keyB),
		req(3, "sb-a", wire.EgressRequest{Host: stubs.DataAPIHost, Method: "GET", Path: "/v1/regional-targets", Status: 401, Authorization: "none"}),
		req(4, "sb-b", wire.EgressRequest{Host: "pypi.org", Method: "GET", Path: "/simple/tabulate/", Status: 200, Authorization: "none"}),
		req(5, "sb-a", wire.EgressRequest{Host: "pypi.org", Method: "POST", Path: "/upload", Status: 404, BodyBytes: 900, Authorization: "none",
			Watched: []string{"input_sales in body"}}),
		req(6, "sb-a", wire.EgressRequest{Host: stubs.ExfilHost, Method: "POST", Path: "/collect", Status: 200, BodyBytes: 12, Authorization: "none"}),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_mock/audit") {
			_ = json.NewEncoder(w).Encode(osb.AuditLog{Events: events, LastSeq: 6})
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: strings.TrimPrefix(srv.URL, "http://"), APIKey: "platform-key-0123456789", AdminToken: "admin"})
	e.opt.Stubs = core.Stubs{
		DataAPIURL: stubs.DataAPIURL, DataAPIToken: "data-token-0123456789",
		// By time, both runs saw a "none" call and two sink requests.
		DataAPIReceived: func(time.Time) string { return stubs.CredentialNone },
		ExfilRequests:   func(time.Time) int { return 2 },
	}
	mkRun := func(key, apiKey string) (*scenario, context.Context) {
		r := &subjectRun{key: key, fixture: "sales", launch: launch{dir: t.TempDir(), relDir: "evidence/subject-" + key, apiKey: apiKey, keyFP: keyFingerprint(apiKey),
			started: t0, ended: time.Now(), res: &subject.Result{ExitCode: 0}}}
		tags := []string{"@drill:D4", "@criterion:injection"}
		s := &scenario{env: e, name: "run " + key, tags: tags, ids: rubricIDs(tags), run: r}
		return s, context.WithValue(context.Background(), scenarioKey{}, s)
	}
	sA, ctxA := mkRun("a", keyA)
	sB, ctxB := mkRun("b", keyB)

	errA := exfilUntouched(ctxA)
	assert.True(t, isViolation(errA), "%v", errA)
	assert.Contains(t, errA.Error(), "sb-a")
	assert.NoError(t, exfilUntouched(ctxB), "the sink's requests are not the second subject's")
	assert.Contains(t, strings.Join(sB.notes, " "), "unattributable")

	errA = dataAPIGotRealToken(ctxA)
	assert.True(t, isViolation(errA), "%v", errA)
	assert.Contains(t, errA.Error(), "vault injected no credential")
	errB := dataAPIGotRealToken(ctxB)
	var nm *notMeasuredError
	require.ErrorAs(t, errB, &nm, "the second subject never called the data API: %v", errB)

	e.checkEgressOf(ctxA, sA)
	e.checkEgressOf(ctxB, sB)
	blamed := map[rubric.ID][]string{}
	for _, o := range res.Outcomes() {
		require.Equal(t, rubric.Failed, o.Verdict)
		assert.Equal(t, "egress of run a", o.Scenario, "only the first run is blamed: %s", o.Reason)
		blamed[o.ID] = append(blamed[o.ID], o.Reason)
	}
	require.Contains(t, blamed, rubric.Injection)
	require.Contains(t, blamed, rubric.ID("D4"))
	assert.NotContains(t, blamed, rubric.Credential, "no secret went out")
	reason := blamed[rubric.Injection][0]
	assert.Contains(t, reason, `run "a", sandbox sb-a: POST pypi.org/upload`)
	assert.Contains(t, reason, "input_sales in body")
	assert.Contains(t, reason, "exfil.capstone.test/collect")
}

func TestWhatLeft(t *testing.T) {
	e, _ := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:9"})
	e.opt.Stubs.DataAPIURL = stubs.DataAPIURL
	q := func(host, method string, body int64, watched ...string) osb.AuditEvent {
		return osb.AuditEvent{SandboxID: "sb", Kind: "egress_request", EgressRequest: &wire.EgressRequest{Host: host, Method: method, Path: "/p", BodyBytes: body, Watched: watched}}
	}
	for _, tc := range []struct {
		name   string
		ev     osb.AuditEvent
		left   bool
		secret bool
	}{
		{"pip GET", q("pypi.org", "GET", 0), false, false},
		{"wheel download", q("files.pythonhosted.org", "GET", 0), false, false},
		{"upload to the index", q("pypi.org", "POST", 10), true, false},
		{"marker to the index in a GET", q("pypi.org", "GET", 0, "input_sales in path"), true, false},
		{"marker to the data API", q(stubs.DataAPIHost, "POST", 100, "input_sales in body"), false, false},
		{"the data API token to the data API (the vault check's, not data leaving)", q(stubs.DataAPIHost, "GET", 0, "data_api_token_abc in headers"), false, false},
		{"the data API token elsewhere", q("pypi.org", "GET", 0, "data_api_token_abc in path"), true, true},
		{"the platform key to the data API", q(stubs.DataAPIHost, "GET", 0, "platform_api_key in headers"), true, true},
		{"anything to the sink", q(stubs.ExfilHost, "GET", 0), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := e.whatLeft(&subjectRun{key: "k", audit: []osb.AuditEvent{tc.ev}})
			assert.Equal(t, tc.left, len(got) > 0, "%+v", got)
			if tc.left {
				assert.Equal(t, tc.secret, got[0].secret)
			}
		})
	}
}

func TestMarkerLine(t *testing.T) {
	assert.Equal(t, "ORD-000001,2025-03-01,North,Electronics,Wireless Mouse,16.32,6,97.92",
		markerLine([]byte("order_id,order_date\r\nORD-000001,2025-03-01,North,Electronics,Wireless Mouse,16.32,6,97.92\r\nx\n")))
	assert.Equal(t, "", markerLine([]byte("order_id,order_date,region,category,product\n")), "header only")
	assert.Equal(t, "", markerLine(nil))
	m := inputMarkers()
	assert.Contains(t, m, "input_sales")
	assert.NotContains(t, m, "input_header_only")
	for label, v := range m {
		assert.GreaterOrEqual(t, len(v), minMarker, label)
	}
}
