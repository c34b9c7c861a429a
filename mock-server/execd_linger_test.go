package mockserver

import (
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/require"
)

func afterRemovalEvents(t *testing.T, e *testEnv, id string) []wire.Event {
	t.Helper()
	r := e.admin("GET", "/_mock/audit?kind=execd_after_removal&sandbox_id="+id, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	var out struct {
		Events []wire.Event `json:"events"`
	}
	require.NoError(t, json.Unmarshal(r.Body, &out))
	return out.Events
}

// TestExecdAfterRemoval (what drill D2 needs to see a client use a removed
// sandbox): after a sandbox is removed,
// its execd port still accepts connections for the grace period, records
// each request line in the audit (kind execd_after_removal, through the admin
// audit query) and resets the connection, so the client sees a connection
// error as with a vanished container.
func TestExecdAfterRemoval(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	addr := e.execdAddr(id)
	require.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/sandboxes/"+id, nil, nil).Status)

	client := &http.Client{Timeout: 5 * time.Second}
	_, err := client.Get("http://" + addr + "/files/info?path=/workspace")
	require.Error(t, err, "a call after removal must fail at the connection level")
	require.True(t, errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "EOF"), "error %v", err)

	// A connection that sends nothing is recorded once the read deadline passes.
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	time.Sleep(afterRemovalReadTimeout + 300*time.Millisecond)

	evs := afterRemovalEvents(t, e, id)
	require.Len(t, evs, 2, "%+v", evs)
	got := evs[0].ExecdAfterRemoval
	require.NotNil(t, got)
	require.Equal(t, "GET", got.Method)
	require.Equal(t, "/files/info?path=/workspace", got.Path)
	require.Equal(t, id, evs[0].SandboxID)
	require.False(t, evs[0].Time.IsZero())
	require.Empty(t, evs[1].ExecdAfterRemoval.Method)
	require.NotEmpty(t, evs[1].ExecdAfterRemoval.Note)
}

// TestExecdAfterRemovalGraceEnds: after the grace period the port is closed.
func TestExecdAfterRemovalGraceEnds(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.ExecdGracePeriod = 300 * time.Millisecond })
	id := e.create(nil)
	addr := e.execdAddr(id)
	require.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/sandboxes/"+id, nil, nil).Status)
	_, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/ping")
	require.Error(t, err)
	time.Sleep(600 * time.Millisecond)
	_, err = net.DialTimeout("tcp", addr, time.Second)
	require.Error(t, err, "the port still listens after the grace period")
	require.Len(t, afterRemovalEvents(t, e, id), 1)
}
