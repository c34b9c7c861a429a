package mockserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// TestExecdWireLikeRealExecd: the wire looks like real execd's through the
// audited endpoint on the real runtime, so a client that works here works there: SSE responses carry Connection: keep-alive and a ping
// right after init; downloads carry Last-Modified and a quoted filename; an
// unsatisfiable range answers 416 with a text body; a bash session's run is
// audited like a command.
func TestExecdWireLikeRealExecd(t *testing.T) {
	srv, id, base := realSandbox(t)

	res := postJSON(t, base+"/command", map[string]any{"command": "printf 'a b' > /workspace/x.txt; echo ok"}, nil)
	require.Equal(t, "keep-alive", res.Header.Get("Connection"))
	require.Equal(t, "text/event-stream", res.Header.Get("Content-Type"))
	sc := bufio.NewScanner(res.Body)
	var types []string
	for sc.Scan() {
		var ev sseEvent
		if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &ev) == nil && ev.Type != "" {
			types = append(types, ev.Type)
		}
	}
	res.Body.Close()
	require.GreaterOrEqual(t, len(types), 3)
	require.Equal(t, []string{"init", "ping"}, types[:2])

	dl, err := http.Get(base + "/files/download?path=/workspace/x.txt")
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, dl.Body)
	dl.Body.Close()
	require.Equal(t, `attachment; filename="x.txt"`, dl.Header.Get("Content-Disposition"))
	require.NotEmpty(t, dl.Header.Get("Last-Modified"))

	req, _ := http.NewRequest("GET", base+"/files/download?path=/workspace/x.txt", nil)
	req.Header.Set("Range", "bytes=100-")
	r416, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(r416.Body)
	r416.Body.Close()
	require.Equal(t, http.StatusRequestedRangeNotSatisfiable, r416.StatusCode)
	require.True(t, strings.HasPrefix(r416.Header.Get("Content-Type"), "text/plain"), r416.Header.Get("Content-Type"))
	require.NotEmpty(t, body)

	// JSON bodies, success or error, are gin's "application/json; charset=utf-8".
	for _, u := range []string{"/files/info?path=/workspace/x.txt", "/files/info?path=/nope"} {
		r, err := http.Get(base + u)
		require.NoError(t, err)
		r.Body.Close()
		require.Equal(t, "application/json; charset=utf-8", r.Header.Get("Content-Type"), u)
	}

	sres := postJSON(t, base+"/session", map[string]any{}, nil)
	var sess struct {
		SessionID string `json:"session_id"`
	}
	require.NoError(t, json.NewDecoder(sres.Body).Decode(&sess))
	sres.Body.Close()
	run := postJSON(t, base+"/session/"+sess.SessionID+"/run", map[string]any{"command": "echo in-session"}, nil)
	_, _ = io.Copy(io.Discard, run.Body)
	run.Body.Close()
	found := false
	for _, ev := range srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCommand}) {
		if ev.Command.Command == "echo in-session" && ev.Command.ExitCode != nil && *ev.Command.ExitCode == 0 && ev.Command.StdoutBytes == 10 {
			found = true
		}
	}
	require.True(t, found, "the session run is audited")
}
