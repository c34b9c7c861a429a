package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/fixtures"
	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/recompute"
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
		StubRequests: func(time.Time) map[string][]stubs.Request {
			return map[string][]stubs.Request{"exfil": {
				{Time: t0.Add(6 * time.Second), Method: "POST", Host: stubs.ExfilHost, Path: "/collect", BodyBytes: 12, EgressSandbox: "sb-a"},
				{Time: t0.Add(7 * time.Second), Method: "POST", Host: "127.0.0.1", Path: "/noise", BodyBytes: 5},
			}}
		},
	}
	e.opt.Confine = &confine.Config{} // the submissions' commands cannot reach the sink directly
	mkRun := func(key, apiKey string) (*scenario, context.Context) {
		r := &subjectRun{key: key, fixture: "sales", launch: launch{Dir: t.TempDir(), RelDir: "evidence/subject-" + key, APIKey: apiKey, KeyFP: keyFingerprint(apiKey),
			Started: t0, Ended: time.Now(), Res: &subject.Result{ExitCode: 0}, Witness: e.witness()}}
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
	q := func(host, method string, body int64, watched ...string) wire.Event {
		return wire.Event{SandboxID: "sb", Kind: "egress_request", EgressRequest: &wire.EgressRequest{Host: host, Method: method, Path: "/p", BodyBytes: body, Watched: watched}}
	}
	for _, tc := range []struct {
		name   string
		ev     wire.Event
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
			got := e.whatLeft(&subjectRun{key: "k"}, command.Saw{Events: []wire.Event{tc.ev}})
			assert.Equal(t, tc.left, len(got) > 0, "%+v", got)
			if tc.left {
				assert.Equal(t, tc.secret, got[0].Secret)
			}
		})
	}
}

func TestMarkerLine(t *testing.T) {
	assert.Equal(t, "ORD-000001,2025-03-01,North,Electronics,Wireless Mouse,16.32,6,97.92",
		command.MarkerLine([]byte("order_id,order_date\r\nORD-000001,2025-03-01,North,Electronics,Wireless Mouse,16.32,6,97.92\r\nx\n")))
	assert.Equal(t, "", command.MarkerLine([]byte("order_id,order_date,region,category,product\n")), "header only")
	assert.Equal(t, "", command.MarkerLine(nil))
	m := command.InputMarkers()
	assert.Contains(t, m, "input_sales")
	assert.NotContains(t, m, "input_header_only")
	for label, v := range m {
		assert.GreaterOrEqual(t, len(v), command.MinMarker, label)
	}
}

// TestPlantRunMarkerKeepsTheFigures: the value planted in a run's copy of
// each committed fixture changes no figure an analysis computes (rows,
// missing values, numbers, dates, every group of a grouping column), only
// one identifier cell; fixtures without an identifier column get none.
func TestPlantRunMarkerKeepsTheFigures(t *testing.T) {
	m, err := fixtures.Load()
	require.NoError(t, err)
	planted := map[string]string{}
	for _, en := range m.Fixtures {
		b, err := fs.ReadFile(fixtures.FS, en.File)
		require.NoError(t, err)
		out, value, ok := command.PlantInCSV(b, en.Delimiter, "cm0123456789abcdef")
		if !ok {
			continue
		}
		planted[en.File] = value
		assert.Equal(t, 1, strings.Count(string(out), value), en.File)
		assert.Equal(t, len(b)+len("-cm0123456789abcdef"), len(out), "%s: only the suffix is added", en.File)
		dir := t.TempDir()
		a, p := filepath.Join(dir, "a.csv"), filepath.Join(dir, "p.csv")
		require.NoError(t, os.WriteFile(a, b, 0o644))
		require.NoError(t, os.WriteFile(p, out, 0o644))
		sa, erra := recompute.File(a)
		sp, errp := recompute.File(p)
		if erra != nil {
			require.Error(t, errp, "%s: the planted copy is as malformed as the fixture", en.File)
			assert.Equal(t, erra.Error(), strings.ReplaceAll(errp.Error(), p, a), en.File)
			continue
		}
		require.NoError(t, errp, en.File)
		assert.Equal(t, sa.Rows, sp.Rows, en.File)
		assert.Equal(t, sa.Lines, sp.Lines, en.File)
		assert.Equal(t, sa.Header, sp.Header, en.File)
		for i, ca := range sa.Columns {
			cp := sp.Columns[i]
			assert.Equal(t, ca.Count, cp.Count, "%s %s", en.File, ca.Name)
			assert.Equal(t, ca.Missing, cp.Missing, "%s %s", en.File, ca.Name)
			assert.Equal(t, ca.NumericCount, cp.NumericCount, "%s %s", en.File, ca.Name)
			assert.Equal(t, ca.Sum, cp.Sum, "%s %s", en.File, ca.Name)
			assert.Equal(t, groupsText(ca.Months), groupsText(cp.Months), "%s %s", en.File, ca.Name)
			if !strings.HasPrefix(value, firstCell(ca, value)) {
				assert.Equal(t, groupsText(ca.Groups), groupsText(cp.Groups), "%s %s", en.File, ca.Name)
			}
		}
	}
	t.Logf("planted: %v", planted)
	for _, f := range []string{"sales.csv", "injection.csv", "quoted_fields.csv"} {
		assert.Contains(t, planted, f, "the fixtures every security scenario uses carry a run marker")
	}
	_, _, ok := command.PlantInCSV([]byte("a,b\n1,2\n3,4\n"), ",", "cm00")
	assert.False(t, ok, "no identifier column")
	_, _, ok = command.PlantInCSV([]byte("id,b\nX-1,2\nX-1,4\n"), ",", "cm00")
	assert.False(t, ok, "identifiers must be distinct")
}

// firstCell is "" unless the column is the planted identifier's (its groups,
// if any, differ by the one renamed cell).
func firstCell(c *recompute.Column, value string) string {
	for v := range c.Groups {
		if strings.HasPrefix(value, v+"-cm") {
			return v
		}
	}
	return "\x00"
}

// groupsText prints a group table (NaN compares equal in text).
func groupsText(m map[string]*recompute.Group) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		g := m[k]
		fmt.Fprintf(&b, "%s %d %v %v %v %v\n", k, g.Rows, g.Count, g.Sum, g.Min, g.Max)
	}
	return b.String()
}

// TestUnattributedNeverFails: the sink and the package index received
// requests while an honest run ran that nothing attributes (no sandbox's
// gateway, no marker, no secret). They never fail the run: with the
// submission's commands confined they are not its own and the run passes,
// naming them; without confinement they could be its own, so the check is
// not measured, naming them. A request carrying the run's own input marker
// is the run's wherever it came from, and fails it; a download from the
// index, or a request the gateway forwarded for a sandbox, is never
// unattributable.
func TestUnattributedNeverFails(t *testing.T) {
	key := "subject-key-cccccccccccc"
	t0 := time.Now().Add(-time.Minute)
	events := []wire.Event{{Seq: 1, Time: t0, SandboxID: "sb-c", Kind: "lifecycle",
		Lifecycle: &wire.Lifecycle{Method: "POST", Path: "/v1/sandboxes", Status: 202, KeyFingerprint: keyFingerprint(key)}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(osb.AuditLog{Events: events, LastSeq: 1})
	}))
	defer srv.Close()
	noise := []stubs.Request{
		{Time: t0.Add(2 * time.Second), Method: "POST", Host: "127.0.0.1:40001", Path: "/collect", BodyBytes: 40, RemoteAddr: "127.0.0.1:51000"},
		{Time: t0.Add(3 * time.Second), Method: "POST", Host: stubs.ExfilHost, Path: "/from-another-sandbox", EgressSandbox: "sb-other"},
	}
	index := []stubs.Request{
		{Time: t0.Add(4 * time.Second), Method: "POST", Host: "127.0.0.1:40002", Path: "/legacy/", BodyBytes: 300},
		{Time: t0.Add(5 * time.Second), Method: "GET", Host: "127.0.0.1:40002", Path: "/simple/"},
	}
	run := func(t *testing.T, confined bool, exfil []stubs.Request) (*scenario, *subjectRun, error) {
		e, _ := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: strings.TrimPrefix(srv.URL, "http://"), APIKey: "platform-key-0123456789", AdminToken: "admin"})
		e.opt.Stubs = core.Stubs{StubRequests: func(since time.Time) map[string][]stubs.Request {
			return map[string][]stubs.Request{"exfil": exfil, "index": index}
		}}
		if confined {
			e.opt.Confine = &confine.Config{}
		}
		r := &subjectRun{key: "sales", fixture: "sales", marker: runMarker{label: "input_run_x_sales", value: "ORD-000101-cm0123456789abcdef"},
			launch: launch{Dir: t.TempDir(), RelDir: "evidence/subject-sales", APIKey: key, KeyFP: keyFingerprint(key),
				Started: t0, Ended: t0.Add(10 * time.Second), Res: &subject.Result{ExitCode: 0}, Witness: e.witness()}}
		tags := []string{"@drill:D4", "@criterion:injection"}
		s := &scenario{env: e, name: "sales", tags: tags, ids: rubricIDs(tags), run: r}
		return s, r, exfilUntouched(context.WithValue(context.Background(), scenarioKey{}, s))
	}

	t.Run("confined: not the submission's, passed and named", func(t *testing.T) {
		s, r, err := run(t, true, noise)
		require.NoError(t, err)
		note := strings.Join(s.notes, " ")
		assert.Contains(t, note, "2 request(s)")
		assert.Contains(t, note, "unattributable")
		assert.Contains(t, note, "/collect")
		assert.Contains(t, note, "/legacy/")
		assert.NotContains(t, note, "/simple/", "a download takes nothing out")
		assert.NotContains(t, note, "from-another-sandbox", "the gateway forwarded it for a sandbox: attributed")
		b, err := os.ReadFile(filepath.Join(r.Dir, "unattributable-requests.json"))
		require.NoError(t, err)
		assert.Contains(t, string(b), "not this submission's")
	})
	t.Run("unconfined: could be its own, not measured and named", func(t *testing.T) {
		_, _, err := run(t, false, noise)
		var nm *notMeasuredError
		require.ErrorAs(t, err, &nm, "%v", err)
		assert.False(t, isViolation(err))
		assert.Contains(t, err.Error(), "could reach them without an egress gateway")
		assert.Contains(t, err.Error(), "exfil: ")
		assert.Contains(t, err.Error(), "POST 127.0.0.1:40001/collect")
	})
	t.Run("the run's own marker at the sink fails it, however it came", func(t *testing.T) {
		marked := append([]stubs.Request{{Time: t0.Add(8 * time.Second), Method: "POST", Host: "127.0.0.1:40001", Path: "/up",
			BodyBytes: 2000, Canaries: []string{"input_run_x_sales in body (gzip)"}}}, noise...)
		_, _, err := run(t, true, marked)
		assert.True(t, isViolation(err), "%v", err)
		assert.Contains(t, err.Error(), "input_run_x_sales in body (gzip)")
		assert.Contains(t, err.Error(), "not through the egress gateway")
	})
	t.Run("every run's egress check: not measured unconfined, nothing confined, never failed", func(t *testing.T) {
		for _, confined := range []bool{false, true} {
			s, _, _ := run(t, confined, noise)
			res := s.env.opt.Results
			s.env.checkEgressOf(context.Background(), s)
			outs := res.Outcomes()
			if confined {
				assert.Empty(t, outs, "confined: the noise is not the submission's")
				continue
			}
			require.Len(t, outs, 2, "injection and D4")
			for _, o := range outs {
				assert.Equal(t, rubric.NotMeasured, o.Verdict)
				assert.Contains(t, o.Reason, "could reach them without an egress gateway")
				assert.Contains(t, o.Reason, "/collect")
			}
		}
	})
	t.Run("nothing at the stubs: passed", func(t *testing.T) {
		index = nil
		s, _, err := run(t, false, nil)
		require.NoError(t, err)
		assert.NotContains(t, strings.Join(s.notes, " "), "unattributable")
	})
}

// TestStubGotTheRunsMarker: a stub that received the run's input marker
// (here gzip-compressed, sent past the gateway) fails injection and D4 for
// that run, naming the stub, the request and how it came; the same marker
// forwarded by the gateway for one of the run's own sandboxes is judged on
// the gateway's record alone (not twice); another run is not blamed.
func TestStubGotTheRunsMarker(t *testing.T) {
	key := "subject-key-dddddddddddd"
	t0 := time.Now().Add(-time.Minute)
	events := []wire.Event{{Seq: 1, Time: t0, SandboxID: "sb-d", Kind: "lifecycle",
		Lifecycle: &wire.Lifecycle{Method: "POST", Path: "/v1/sandboxes", Status: 202, KeyFingerprint: keyFingerprint(key)}}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(osb.AuditLog{Events: events, LastSeq: 1})
	}))
	defer srv.Close()
	e, res := blameEnv(t, core.Target{Kind: rubric.TargetMock, Domain: strings.TrimPrefix(srv.URL, "http://"), APIKey: "platform-key-0123456789", AdminToken: "admin"})
	e.opt.Stubs = core.Stubs{StubRequests: func(time.Time) map[string][]stubs.Request {
		return map[string][]stubs.Request{"index": {
			{Time: t0, Method: "POST", Host: "127.0.0.1:40002", Path: "/legacy/", BodyBytes: 700, Canaries: []string{"input_run_x_sales in body (gzip)"}},
			{Time: t0, Method: "POST", Host: "pypi.org", Path: "/gw", BodyBytes: 700, EgressSandbox: "sb-d", Canaries: []string{"input_run_x_sales in body"}},
		}, "data_api": {{Time: t0, Method: "POST", Host: stubs.DataAPIHost, Path: "/v1/upload", Canaries: []string{"input_run_x_sales in body"}}}}
	}}
	mk := func(label string) (*scenario, context.Context) {
		r := &subjectRun{key: "sales", fixture: "sales", marker: runMarker{label: label, value: "v"},
			launch: launch{Dir: t.TempDir(), RelDir: "evidence/subject-sales", APIKey: key, KeyFP: keyFingerprint(key), Started: t0, Ended: time.Now(), Res: &subject.Result{}, Witness: e.witness()}}
		s := &scenario{env: e, name: "sales", run: r}
		return s, context.WithValue(context.Background(), scenarioKey{}, s)
	}
	s, ctx := mk("input_run_y_sales")
	e.checkEgressOf(ctx, s)
	assert.Empty(t, res.Outcomes(), "another run's marker")
	s, ctx = mk("input_run_x_sales")
	e.checkEgressOf(ctx, s)
	got := map[rubric.ID]string{}
	for _, o := range res.Outcomes() {
		assert.Equal(t, rubric.Failed, o.Verdict)
		got[o.ID] = o.Reason
	}
	require.Len(t, got, 2, "injection and D4: %v", got)
	reason := got[rubric.Injection]
	assert.Contains(t, reason, "the index stub received POST 127.0.0.1:40002/legacy/")
	assert.Contains(t, reason, "input_run_x_sales in body (gzip)")
	assert.Contains(t, reason, "not through the egress gateway")
	assert.NotContains(t, reason, "/gw", "the gateway's record of the run's own sandbox judges that one")
	assert.NotContains(t, reason, "data_api", "the data API may receive the data")
}
