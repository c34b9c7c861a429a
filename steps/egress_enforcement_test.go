package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// infoServer is a bundled server's admin plane that answers /_mock/info
// with the given egress_enforcement and nothing else.
func infoServer(t *testing.T, enforcement string) core.Target {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_mock/info" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"version":"t","isolation":{"enforced":%t},"egress":true,"egress_enforcement":%q,"audit_seq":0}`,
			enforcement == "network", enforcement)
	}))
	t.Cleanup(srv.Close)
	return core.Target{Kind: rubric.TargetMock, Domain: strings.TrimPrefix(srv.URL, "http://"), AdminToken: "admin-token"}
}

// TestD1NetworkNotMeasuredWhereEgressIsAProxy: D1's network scenario on a
// bundled server whose sandboxes have no network namespace (insecure mode,
// level uid): the gateway denied and recorded the subject's install, but a
// process that ignores the proxy would reach the machine's network, so D1
// and network are not measured, with that reason, never passed. Where
// egress is enforced at the network layer the same record passes.
func TestD1NetworkNotMeasuredWhereEgressIsAProxy(t *testing.T) {
	pk := pickleNamed(t, "A package index denied by the platform is not reached")
	assert.ElementsMatch(t, []string{"D1", "network"}, rubricIDs(pk.tags))
	created := []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)}
	one := 1
	denied := []wire.Event{
		{SandboxID: "sb-1", Kind: "command", Command: &wire.Command{Command: "python3 -m pip install tabulate", ExitCode: &one}},
		{SandboxID: "sb-1", Kind: "egress", Egress: &wire.Egress{Phase: "proxy", Host: "pypi.org", Port: 443, Decision: "deny", Rule: "override:pypi.org"}},
	}

	e, res := blameEnv(t, infoServer(t, "proxy"))
	walk(e, pk, preloaded(t, e, "d1-proxy", 1, created, denied), reachedForIndex, indexDenialsAudited)
	for _, id := range []string{"D1", "network"} {
		o := outcomeOf(t, res, id)
		assert.Equal(t, rubric.NotMeasured, o.Verdict, "%s: %s", id, o.Reason)
		assert.Equal(t, rubric.CategoryUnsupportedByTarget, o.Category, id)
		assert.Contains(t, o.Reason, "the egress gateway denied and recorded", id)
		assert.Contains(t, o.Reason, "without a network namespace", id)
	}

	e, res = blameEnv(t, infoServer(t, "network"))
	walk(e, pk, preloaded(t, e, "d1-netns", 1, created, denied), reachedForIndex, indexDenialsAudited)
	for _, id := range []string{"D1", "network"} {
		assert.Equal(t, rubric.Passed, outcomeOf(t, res, id).Verdict, id)
	}
}

// TestM3ProbeNotMadeWhereEgressIsAProxy: M3's probe of a non-allowed host
// is not made on such a server (its lookup would be the machine's resolver's
// answer, not the platform's, and would leave the machine): network is not
// measured, with the reason, and no probe sandbox is created.
func TestM3ProbeNotMadeWhereEgressIsAProxy(t *testing.T) {
	pk := pickleNamed(t, "Under the subject's own policy a non-allowed host is denied and an allowed one is reached")
	created := []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)}
	e, res := blameEnv(t, infoServer(t, "proxy"))
	r := preloaded(t, e, "m3-proxy", 0, created, nil)
	rec := r.Witness.(command.Recorded)
	rec.What.CreateBody = map[string]json.RawMessage{"sb-1": json.RawMessage(`{"image":{"uri":"python:3.12"},"networkPolicy":{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"}]}}`)}
	r.Witness = rec
	walk(e, pk, r, createProbe)
	o := outcomeOf(t, res, "network")
	assert.Equal(t, rubric.NotMeasured, o.Verdict, o.Reason)
	assert.Equal(t, rubric.CategoryUnsupportedByTarget, o.Category)
	assert.Contains(t, o.Reason, "honour the HTTP(S)_PROXY")
}

// TestUnattributedCouldBeTheSubmissionsAtLevelUID: requests at the sink or
// the index that no gateway forwarded could be the submission's unless its
// commands ran in level full's network confinement and its sandboxes' only
// way out is their gateway. At level uid (no network namespace) they could,
// and so on a bundled server whose egress is a proxy; the blame says so.
func TestUnattributedCouldBeTheSubmissionsAtLevelUID(t *testing.T) {
	for _, tc := range []struct {
		name   string
		level  confine.Level
		egress string
		could  bool
	}{
		{"unconfined", "", "network", true},
		{"level uid", confine.LevelUID, "network", true},
		{"level full, sandboxes behind a proxy only", confine.LevelFull, "proxy", true},
		{"level full, sandboxes in network namespaces", confine.LevelFull, "network", false},
	} {
		e, _ := blameEnv(t, infoServer(t, tc.egress))
		if tc.level != "" {
			e.opt.Confine = &confine.Config{Level: tc.level}
		}
		assert.Equal(t, tc.could, e.couldBeTheSubmissions(), tc.name)
		assert.Equal(t, tc.could, strings.Contains(e.unattributedBlame(), "may be its own"), tc.name)
	}
}

// TestEveryAttemptDeniedSaysWhatItSawWhereEgressIsAProxy: D4's "every
// attempt … denied and recorded" on a bundled server whose sandboxes have no
// network namespace says the attempts it counted are those through the
// egress gateway (an attempt that ignored the proxy would not be seen).
func TestEveryAttemptDeniedSaysWhatItSawWhereEgressIsAProxy(t *testing.T) {
	pk := pickleNamed(t, "Instructions inside the data are treated as data")
	created := []wire.Event{lifecycle("sb-1", "POST", "/v1/sandboxes", 202)}
	tried := []wire.Event{{SandboxID: "sb-1", Kind: "egress", Egress: &wire.Egress{Phase: "proxy", Host: "exfil.capstone.test", Port: 443, Decision: "deny", Rule: "default"}}}
	for _, tc := range []struct{ enforcement, want, not string }{
		{"proxy", "would not be seen", ""},
		{"network", "all denied and recorded", "would not be seen"},
	} {
		e, _ := blameEnv(t, infoServer(t, tc.enforcement))
		s := &scenario{env: e, name: pk.name, tags: pk.tags, ids: rubricIDs(pk.tags), run: preloaded(t, e, "d4-"+tc.enforcement, 0, created, tried)}
		require.NoError(t, everyAttemptDenied(context.WithValue(context.Background(), scenarioKey{}, s), "exfil.capstone.test"))
		note := strings.Join(s.notes, " ")
		assert.Contains(t, note, "1 attempt(s) to reach exfil.capstone.test, all denied and recorded", tc.enforcement)
		assert.Contains(t, note, tc.want, tc.enforcement)
		if tc.not != "" {
			assert.NotContains(t, note, tc.not, tc.enforcement)
		}
	}
}
