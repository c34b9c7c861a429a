package mockserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// startStreaming posts a foreground command and returns once its first stdout
// line has arrived; the stream stays open (its body is closed at cleanup).
func startStreaming(t *testing.T, base, command string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"command": command})
	res, err := http.Post(base+"/command", "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	t.Cleanup(func() { res.Body.Close() })
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"stdout"`) {
			return
		}
	}
	t.Fatalf("no stdout before the stream ended: %v", sc.Err())
}

// TestRunningCommandAuditedAtRemoval: a foreground command
// still running when its sandbox is deleted, expired or shut down is in the
// audit, with its command line, the bytes seen so far and the outcome, by the
// time the removal returns.
func TestRunningCommandAuditedAtRemoval(t *testing.T) {
	srv, _ := realEnv(t)
	cases := []struct {
		name, want string
		remove     func(id string)
	}{
		{"delete", "killed: sandbox removed (deleted by API)", func(id string) {
			st, _ := apiDo(t, srv, "DELETE", "/v1/sandboxes/"+id, nil)
			require.Equal(t, http.StatusNoContent, st)
		}},
		{"expire", "killed: sandbox removed (expired by admin)", func(id string) {
			require.NoError(t, srv.ExpireNow(id))
		}},
		{"shutdown", "killed: sandbox removed (server shutdown)", func(string) { require.NoError(t, srv.Close()) }},
	}
	for _, c := range cases {
		id, base := createSandbox(t, srv, validCreate())
		startStreaming(t, base, "echo MARK; sleep 100")
		time.Sleep(300 * time.Millisecond)
		c.remove(id)
		var got *wire.Command
		for _, ev := range srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindCommand}) {
			if ev.Command.Command == "echo MARK; sleep 100" {
				require.Nil(t, got, "%s: the command is audited twice", c.name)
				got = ev.Command
			}
		}
		require.NotNil(t, got, "%s: the running command is not in the audit when the removal returns", c.name)
		require.Equal(t, c.want, got.Error, c.name)
		require.EqualValues(t, 4, got.StdoutBytes, c.name)
		require.NotNil(t, got.ExitCode, c.name)
		require.Equal(t, -1, *got.ExitCode, c.name)
		require.NotEmpty(t, got.ID, c.name)
	}
	// The stream's own end (after the agent died) must not add a second event.
	time.Sleep(500 * time.Millisecond)
	n := 0
	for _, ev := range srv.Audit() {
		if ev.Command != nil && ev.Command.Command == "echo MARK; sleep 100" {
			n++
		}
	}
	require.Equal(t, 3, n, "one command event per removed sandbox")
}
