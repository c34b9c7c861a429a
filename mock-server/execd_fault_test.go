package mockserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
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
	for _, ev := range e.srv.AuditQuery(audit.Query{Kind: wire.KindFault}) {
		if ev.Fault.Name == "execd-fault" && ev.SandboxID == faulted {
			hit++
		}
	}
	assert.Equal(t, 1, hit, "the injected failure is audited on the sandbox")
	require.Equal(t, http.StatusNoContent, e.admin("DELETE", "/_mock/faults/execd?key_fingerprint="+Fingerprint(testKey), nil).Status)
}

// The execd fault's symptom is exactly its status, also for an upload far
// larger than what net/http drains by itself (256 KiB) sent as Python's
// clients send it: the whole body first, then the answer is read. The body
// is read before the answer, so the client is never reset instead.
func TestExecdFaultOnALargeUploadIsItsStatus(t *testing.T) {
	e := newEnv(t)
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/faults/execd",
		map[string]any{"key_fingerprint": Fingerprint(testKey), "call": 1, "status": 503}).Status)
	id := e.create(nil)
	body, ctype := uploadBody("/workspace/big.bin", strings.Repeat("x", 16<<20))
	c, err := net.Dial("tcp", e.execdAddr(id))
	require.NoError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	head := fmt.Sprintf("POST /files/upload HTTP/1.1\r\nHost: execd\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", ctype, len(body))
	_, err = c.Write(append([]byte(head), body...))
	require.NoError(t, err, "the whole upload is taken, not reset")
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "the faulted upload gets its status, not a connection error")
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	assert.Contains(t, string(b), `"MOCK::INJECTED_FAULT"`)
}
