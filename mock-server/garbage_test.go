package mockserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGarbageNeverCauses500 throws malformed input at every route: every
// answer must be a client error with a JSON body (checked by call), never a 500.
func TestGarbageNeverCauses500(t *testing.T) {
	e := newEnv(t, withEgress(newFakeEgress()))
	id := e.create(nil)
	bodies := []string{"", "null", "[]", "{}", `{"x":`, `"s"`, "1e999", strings.Repeat("[", 20000),
		`{"image":{"uri":"python:3.11"},"entrypoint":["x"],"resourceLimits":{},"timeout":1e999}`,
		`{"image":"python","entrypoint":"x","resourceLimits":[],"env":[],"metadata":"m","timeout":true}`,
		`{"image":{"uri":5},"entrypoint":[1],"resourceLimits":{"cpu":1},"networkPolicy":{"egress":{}},"credentialProxy":true,"volumes":{}}`,
		`{"image":{"uri":"python:3.11"},"entrypoint":["x"],"resourceLimits":{"cpu":"lots","memory":"-5Gi"},"platform":"linux"}`,
		`{"expiresAt":5}`, `{"expiresAt":"2026-13-45T99:99:99Z"}`, `{"a":{"b":1}}`,
	}
	routes := []struct{ method, path string }{
		{"POST", "/v1/sandboxes"}, {"PATCH", "/v1/sandboxes/" + id + "/metadata"},
		{"POST", "/v1/sandboxes/" + id + "/renew-expiration"}, {"POST", "/v1/sandboxes/" + id + "/pause"},
		{"GET", "/v1/sandboxes/" + id + "/endpoints/%C3%A9"}, {"GET", "/v1/sandboxes/%2F%2E%2E/endpoints/1"},
		{"GET", "/v1/sandboxes?page=-1&pageSize=99999999999999999999&metadata=%%%&state="},
		{"GET", "/v1/sandboxes?metadata=a%3D%25ZZ"},
		{"POST", "/v1/sandboxes/" + id + "/snapshots"}, {"PUT", "/v1/pools/x"}, {"POST", "/v1/metrics/events"},
		{"GET", "/v1/sandboxes/" + id + "/diagnostics/logs?tail=abc"},
	}
	for _, r := range routes {
		for _, b := range bodies {
			res := e.call(r.method, r.path, b, nil)
			if res.Status != http.StatusNotImplemented { // snapshots and pools are 501 by design
				assert.Less(t, res.Status, 500, "%s %s %q → %d %s", r.method, r.path, b, res.Status, res.Body)
			}
		}
	}
	for _, b := range []string{"", "{}", `{"targets":"x"}`, `{"canaries":[]}`, "nope"} {
		for _, p := range []struct{ m, path string }{{"POST", "/_mock/faults/egress-deny"}, {"PUT", "/_mock/canaries"}, {"GET", "/_mock/audit?since=-1"}} {
			res := e.call(p.m, p.path, b, map[string]string{headerAdminToken: testAdmin})
			assert.Less(t, res.Status, 500, "%s %s %q", p.m, p.path, b)
		}
	}
	assert.Equal(t, http.StatusOK, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status)
}
