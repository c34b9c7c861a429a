package mockserver

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
)

// The execd fault fails exactly the Nth execd operation of sandboxes created
// with one key, is audited, and leaves other keys' sandboxes alone.
func TestExecdFault(t *testing.T) {
	e := newEnv(t)
	for _, bad := range []any{nil, map[string]any{"key_fingerprint": "", "call": 2, "status": 500},
		map[string]any{"key_fingerprint": "abc", "call": 0, "status": 500}, map[string]any{"key_fingerprint": "abc", "call": 1, "status": 404}} {
		assert.Equal(t, http.StatusBadRequest, e.admin("POST", "/_mock/faults/execd", bad).Status, "%v", bad)
	}
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/faults/execd",
		map[string]any{"key_fingerprint": Fingerprint(testKey), "call": 2, "status": 500}).Status)

	other := "other-key-0123456789"
	require.NoError(t, e.srv.AddAPIKey(other))
	faulted := e.create(nil)
	r := e.call("POST", "/v1/sandboxes", validCreate(), map[string]string{headerAPIKey: other})
	require.Equal(t, http.StatusAccepted, r.Status)
	spared, _ := r.JSON(t)["id"].(string)

	run := func(id string) int {
		res := postJSON(t, "http://"+e.execdAddr(id)+"/command", map[string]any{"command": "echo hi"}, nil)
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, []int{200, 500, 200}, []int{run(faulted), run(faulted), run(faulted)}, "only the 2nd operation fails")
	assert.Equal(t, []int{200, 200}, []int{run(spared), run(spared)}, "another key's sandbox is untouched")

	hit := 0
	for _, ev := range e.srv.AuditQuery(audit.Query{Kind: audit.KindFault}) {
		if ev.Fault.Name == "execd-fault" && ev.SandboxID == faulted {
			hit++
		}
	}
	assert.Equal(t, 1, hit, "the injected failure is audited on the sandbox")
	require.Equal(t, http.StatusNoContent, e.admin("DELETE", "/_mock/faults/execd?key_fingerprint="+Fingerprint(testKey), nil).Status)
}
