package confine

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/observe"
)

// On a real target (a server without tenants) the box reaches the server
// through its submission's recording proxy, and the guard in front of that
// proxy learns whose sandbox is whose from the create answers the class's
// proxies relayed (observe.View.Mine): a classmate's sandbox is refused and
// recorded, with a key or without, the submission's own and an id no one
// created go through (the server answers for an unknown one).
func TestBoxGuardOwnershipOnARealTarget(t *testing.T) {
	cfg := needBoxes(t)
	var n atomic.Int64
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.TrimSuffix(r.URL.Path, "/") == "/v1/sandboxes" {
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, `{"id":"sb-%d"}`, n.Add(1))
			return
		}
		fmt.Fprintf(w, "served %s %s\n", r.Method, r.URL.Path)
	}))
	defer upstream.Close()
	class := observe.NewClass()
	mine, theirs := class.NewView(), class.NewView()
	classmate, err := observe.StartFor(upstream.URL, theirs)
	require.NoError(t, err)
	defer classmate.Close()
	resp, err := http.Post("http://"+classmate.Domain()+"/v1/sandboxes", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.Equal(t, []string{"sb-1"}, theirs.IDs())

	proxy, err := observe.StartFor(upstream.URL, mine)
	require.NoError(t, err)
	defer proxy.Close()
	pp := proxy.Domain()[strings.LastIndex(proxy.Domain(), ":")+1:]
	var port int
	_, err = fmt.Sscan(pp, &port)
	require.NoError(t, err)
	guard := func(p int) func(*http.Request) string {
		if p != port {
			return nil
		}
		return func(*http.Request) string { return "" }
	}
	owns := func(id string) (bool, error) { return mine.Mine(id), nil }
	r := run(t, cfg, Request{Allow: func(p int) bool { return p == port }, Guard: guard, Owns: owns}, fmt.Sprintf(`
u=http://127.0.0.1:%d
curl -s -m 5 -X POST $u/v1/sandboxes -d '{}'; echo
curl -s -m 5 -X POST $u/v1/sandboxes/sb-1/proxy/44772/command -d '{"command":"id"}'
curl -s -m 5 -H 'OPEN-SANDBOX-API-KEY: k' -X DELETE $u/v1/sandboxes/sb-1
curl -s -m 5 -H 'OPEN-SANDBOX-API-KEY: k' $u/v1/sandboxes/sb-2
curl -s -m 5 -o /dev/null -w 'made-up %%{http_code}\n' $u/v1/sandboxes/made-up
`, port))
	assert.Contains(t, r.stdout, `{"id":"sb-2"}`, r.stdout)
	assert.Contains(t, r.stdout, `refused by the grader's confinement: sandbox "sb-1" is not this submission's`)
	assert.NotContains(t, r.stdout, "served POST /v1/sandboxes/sb-1")
	assert.NotContains(t, r.stdout, "served DELETE /v1/sandboxes/sb-1")
	assert.Contains(t, r.stdout, "served GET /v1/sandboxes/sb-2\n", "its own sandbox")
	assert.Contains(t, r.stdout, "made-up 200\n", "an id no one created goes to the server")
	st := r.box.Status()
	assert.Equal(t, 2, st.RefusedCount, st.Refused)
	for _, x := range st.Refused {
		assert.Contains(t, x.Reason, `sandbox "sb-1" is not this submission's`)
		host, _, _ := net.SplitHostPort(strings.Fields(x.Addr)[0])
		assert.Equal(t, "127.0.0.1", host)
	}
	assert.Equal(t, []string{"sb-2"}, mine.IDs())
}

// Config.Unbounded (the benchmark's baseline only) is what it says: the box
// inherits the grader's RLIMIT_NOFILE and its Status says its bounds were off.
func TestBoxUnboundedSaysSo(t *testing.T) {
	cfg := needBoxes(t)
	bounded := run(t, cfg, Request{}, `ulimit -n`)
	assert.Equal(t, fmt.Sprint(DefaultLimits.NoFile), strings.TrimSpace(bounded.stdout))
	assert.NotContains(t, strings.Join(bounded.box.Status().Degraded, "\n"), "Unbounded")
	cfg.Unbounded = true
	r := run(t, cfg, Request{}, `ulimit -n`)
	assert.NotEqual(t, fmt.Sprint(DefaultLimits.NoFile), strings.TrimSpace(r.stdout))
	assert.Contains(t, strings.Join(r.box.Status().Degraded, "\n"), "Unbounded benchmark baseline")
	assert.Equal(t, "partial", r.box.Status().Mode)
}
