package mockserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Drill D3's simulated capacity exhaustion: while the fault is on every
// create answers 429 with Retry-After; off again, creates succeed.
func TestCapacityFault(t *testing.T) {
	e := newEnv(t)
	for _, bad := range []any{nil, map[string]any{"retry_after_seconds": 0}, map[string]any{"retry_after_seconds": 301}} {
		assert.Equal(t, http.StatusBadRequest, e.admin("POST", "/_mock/faults/capacity", bad).Status, "%v", bad)
	}
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/faults/capacity", map[string]any{"retry_after_seconds": 2}).Status)

	r := e.call("POST", "/v1/sandboxes", validCreate(), nil)
	assert.Equal(t, http.StatusTooManyRequests, r.Status)
	assert.Equal(t, "2", r.Header.Get("Retry-After"))
	assert.Equal(t, "KUBERNETES::POOL_CAPACITY_EXHAUSTED", r.JSON(t)["code"], "1.1.1 Kubernetes pool at capacity")
	assert.Equal(t, "No Pool capacity became available before the acquisition timeout.", r.JSON(t)["message"])
	assert.Empty(t, e.srv.Sandboxes(), "nothing was created")

	require.Equal(t, http.StatusNoContent, e.admin("DELETE", "/_mock/faults/capacity", nil).Status)
	e.create(nil)

	var on, off bool
	for _, ev := range e.srv.AuditQuery(audit.Query{Kind: wire.KindFault}) {
		if ev.Fault.Name == "capacity-429" {
			on = on || ev.Fault.Active
			off = off || !ev.Fault.Active
		}
	}
	assert.True(t, on && off, "switching the fault on and off is audited")
	var refused int
	for _, ev := range e.srv.AuditQuery(audit.Query{Kind: wire.KindLifecycle}) {
		if ev.Lifecycle.Method == "POST" && ev.Lifecycle.Status == http.StatusTooManyRequests {
			refused++
		}
	}
	assert.Equal(t, 1, refused, "the refused create is in the audit")
}

// A capacity fault keyed to one API key refuses that key's creates only:
// another subject graded on the same server meanwhile creates as usual.
func TestCapacityFaultByKey(t *testing.T) {
	e := newEnv(t)
	const other = "test-key-of-another-subject"
	require.NoError(t, e.srv.AddAPIKey(other))
	fp := wire.Fingerprint(testKey)
	assert.Equal(t, http.StatusBadRequest, e.admin("POST", "/_mock/faults/capacity", map[string]any{"retry_after_seconds": 2, "key_fingerprint": " x"}).Status)
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/faults/capacity", map[string]any{"retry_after_seconds": 3, "key_fingerprint": fp}).Status)

	r := e.call("POST", "/v1/sandboxes", validCreate(), nil)
	assert.Equal(t, http.StatusTooManyRequests, r.Status)
	assert.Equal(t, "3", r.Header.Get("Retry-After"))
	r = e.call("POST", "/v1/sandboxes", validCreate(), map[string]string{headerAPIKey: other})
	assert.Equal(t, http.StatusAccepted, r.Status, "another key is not refused")

	// Clearing the every-create rule leaves the keyed one; clearing the key's lifts it.
	require.Equal(t, http.StatusNoContent, e.admin("DELETE", "/_mock/faults/capacity", nil).Status)
	assert.Equal(t, http.StatusTooManyRequests, e.call("POST", "/v1/sandboxes", validCreate(), nil).Status)
	require.Equal(t, http.StatusNoContent, e.admin("DELETE", "/_mock/faults/capacity?key_fingerprint="+fp, nil).Status)
	e.create(nil)

	var details []string
	for _, ev := range e.srv.AuditQuery(audit.Query{Kind: wire.KindFault}) {
		if ev.Fault.Name == "capacity-429" && ev.Fault.Active {
			details = append(details, ev.Fault.Detail)
		}
	}
	require.Len(t, details, 1)
	assert.Contains(t, details[0], "every create with key "+fp)
}
