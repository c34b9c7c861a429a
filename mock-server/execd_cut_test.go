package mockserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// captureStdLog sends the standard logger's output to a buffer for the test.
func captureStdLog(t *testing.T) *syncBuffer {
	buf := &syncBuffer{}
	prev := log.Writer()
	log.SetOutput(buf)
	t.Cleanup(func() { log.SetOutput(prev) })
	return buf
}

// openStream starts command through url and reads up to its first stdout
// event; the caller reads or closes the rest.
func openStream(t *testing.T, url, command string) *http.Response {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"command": command})
	res, err := http.Post(url, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	require.Equal(t, http.StatusOK, res.StatusCode)
	br := bufio.NewReader(res.Body)
	for {
		line, err := br.ReadString('\n')
		require.NoError(t, err, "no stdout before the stream ended")
		if strings.Contains(line, `"stdout"`) {
			break
		}
	}
	res.Body = io.NopCloser(io.MultiReader(br, res.Body))
	return res
}

// TestStreamCutByRemovalIsQuiet: the "ReverseProxy read error during body
// copy: unexpected EOF" lines in test logs came from a sandbox removed under
// a running command (the D2 expire-mid-run scenario, the removal tests): its
// execd is killed with it, so the stream really is cut mid-body (the client
// sees the cut, the audit records the command as killed). That is on purpose,
// so neither the execd endpoint's proxy nor the server proxy in front of it
// logs it. A client hanging up mid-stream never logged anything.
func TestStreamCutByRemovalIsQuiet(t *testing.T) {
	logs := captureStdLog(t)
	srv, _ := realEnv(t)
	for _, via := range []string{"endpoint", "server proxy"} {
		id, base := createSandbox(t, srv, validCreate())
		url := base + "/command"
		if via == "server proxy" {
			url = srv.URL() + "/sandboxes/" + id + "/proxy/44772/command"
		}
		res := openStream(t, url, "echo MARK; sleep 100")
		st, _ := apiDo(t, srv, "DELETE", "/v1/sandboxes/"+id, nil)
		require.Equal(t, http.StatusNoContent, st)
		_, err := io.Copy(io.Discard, res.Body)
		assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "%s: the removal cuts the stream mid-body", via)
		cmds := srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCommand})
		require.Len(t, cmds, 1, via)
		assert.Equal(t, "killed: sandbox removed (deleted by API)", cmds[0].Command.Error, via)
	}

	// A client that hangs up: the stream's end is audited, nothing is logged.
	id, base := createSandbox(t, srv, validCreate())
	res := openStream(t, base+"/command", "echo MARK; sleep 1; echo END")
	require.NoError(t, res.Body.Close())
	require.Eventually(t, func() bool {
		return len(srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCommand})) == 1
	}, 10*time.Second, 50*time.Millisecond, "the hung-up command's stream ends")

	assert.NotContains(t, logs.String(), "ReverseProxy read error", "a cut the removal makes on purpose is not logged")
}

// The proxies' ErrorLog is quiet about the body-copy read error only while
// the sandbox is being removed; every other line, and that one otherwise,
// still reaches the standard logger.
func TestCutFilterQuietOnlyForRemoval(t *testing.T) {
	logs := captureStdLog(t)
	removing := false
	lg := log.New(cutFilter{cut: func() bool { return removing }}, "", 0)
	lg.Printf("httputil: ReverseProxy read error during body copy: %v", io.ErrUnexpectedEOF)
	removing = true
	lg.Printf("httputil: ReverseProxy read error during body copy: %v", io.ErrUnexpectedEOF)
	lg.Printf("http: proxy error: %v", io.ErrUnexpectedEOF)
	assert.Equal(t, "httputil: ReverseProxy read error during body copy: unexpected EOF\nhttp: proxy error: unexpected EOF\n", logs.String())
}
