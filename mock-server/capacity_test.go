package mockserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
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
	assert.Equal(t, "SANDBOX::CAPACITY_EXHAUSTED", r.JSON(t)["code"])
	assert.Empty(t, e.srv.Sandboxes(), "nothing was created")

	require.Equal(t, http.StatusNoContent, e.admin("DELETE", "/_mock/faults/capacity", nil).Status)
	e.create(nil)

	var on, off bool
	for _, ev := range e.srv.AuditQuery(audit.Query{Kind: audit.KindFault}) {
		if ev.Fault.Name == "capacity-429" {
			on = on || ev.Fault.Active
			off = off || !ev.Fault.Active
		}
	}
	assert.True(t, on && off, "switching the fault on and off is audited")
	var refused int
	for _, ev := range e.srv.AuditQuery(audit.Query{Kind: audit.KindLifecycle}) {
		if ev.Lifecycle.Method == "POST" && ev.Lifecycle.Status == http.StatusTooManyRequests {
			refused++
		}
	}
	assert.Equal(t, 1, refused, "the refused create is in the audit")
}
