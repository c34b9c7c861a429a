package observe

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommandStreamEndIsRecorded: a command's exit code is read from execd's
// stream as the proxy forwards it (CONTRACT §2.3: execution_complete for 0,
// error with the code as evalue otherwise, bare JSON frames or "data: "
// ones), so M1's "ran a command to completion" is measured on a real
// target. A stream cut before its terminal event, a spawn failure, a
// background command (whose stream ends at once) and an output line past
// the scanner's bound leave no exit code, and the client gets every byte.
func TestCommandStreamEndIsRecorded(t *testing.T) {
	long := strings.Repeat("x", 3*maxStreamLine)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		flush := func() { _ = http.NewResponseController(w).Flush() }
		id := strings.Split(strings.TrimPrefix(r.URL.Path, "/sandboxes/"), "/")[0]
		_, _ = io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, `{"type":"init","text":"c1","timestamp":1}`+"\n\n")
		flush()
		switch id {
		case "ok":
			// The terminal frame split across writes, after an output line
			// longer than the scanner holds that mentions execution_complete.
			fmt.Fprintf(w, `{"type":"stdout","text":"%s \"type\":\"execution_complete\""}`+"\n\n", long)
			flush()
			fmt.Fprint(w, `{"type":"execution_`)
			flush()
			fmt.Fprint(w, `complete","execution_time":5,"timestamp":2}`+"\n\n")
		case "fail":
			fmt.Fprint(w, `data: {"type":"error","error":{"ename":"CommandExecError","evalue":"3","traceback":["exit status 3"]},"timestamp":2}`+"\n\n")
		case "killed":
			fmt.Fprint(w, `{"type":"error","error":{"ename":"CommandExecError","evalue":"-1","traceback":["signal: killed"]},"timestamp":2}`+"\n\n")
		case "spawn":
			fmt.Fprint(w, `{"type":"error","error":{"ename":"CommandExecError","evalue":"fork/exec /bin/bash: no such file or directory"},"timestamp":2}`+"\n\n")
		case "bg":
			fmt.Fprint(w, `{"type":"execution_complete","timestamp":2}`+"\n\n")
		case "cut":
			fmt.Fprint(w, `{"type":"stdout","text":"half"}`+"\n\n")
			flush()
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				_ = c.Close()
			}
		}
	}))
	defer up.Close()
	p, err := Start(up.URL)
	require.NoError(t, err)
	defer p.Close()

	for _, tc := range []struct {
		id, body string
		want     *int
	}{
		{"ok", `{"command":"python3 analysis.py"}`, ptr(0)},
		{"fail", `{"command":"exit 3"}`, ptr(3)},
		{"killed", `{"command":"sleep 99","timeout":10}`, ptr(-1)},
		{"spawn", `{"command":"x"}`, nil},
		{"bg", `{"command":"sleep 99","background":true}`, nil},
		{"cut", `{"command":"python3 analysis.py"}`, nil},
	} {
		t.Run(tc.id, func(t *testing.T) {
			res, err := http.Post("http://"+p.Domain()+"/sandboxes/"+tc.id+"/proxy/44772/command", "application/json", strings.NewReader(tc.body))
			require.NoError(t, err)
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if tc.id == "ok" {
				assert.Contains(t, string(b), long, "the client got the long line whole")
				assert.True(t, strings.HasSuffix(string(b), `"execution_time":5,"timestamp":2}`+"\n\n"), "and the end")
			}
			var got *Call
			for _, c := range p.EndpointCalls() {
				if c.SandboxID == tc.id {
					got = &c
				}
			}
			require.NotNil(t, got, "the command is on record")
			if tc.want == nil {
				assert.Nil(t, got.ExitCode, "no run to completion seen")
			} else {
				require.NotNil(t, got.ExitCode, "its exit code")
				assert.Equal(t, *tc.want, *got.ExitCode)
			}
		})
	}
}

func ptr(i int) *int { return &i }
