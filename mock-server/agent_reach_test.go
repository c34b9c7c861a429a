package mockserver

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAgentOutOfReachOfSandboxCode: the agent's side of keeping the
// server's own processes out of a submission's reach. Sandbox code
// runs as the same uid as the agent, but the agent is not dumpable, so its
// /proc entries (the control descriptors under /proc/<pid>/fd) cannot be
// opened and it cannot be ptrace-attached: a forged entrypoint_exit written to
// its event descriptor is impossible and the sandbox stays Running.
func TestAgentOutOfReachOfSandboxCode(t *testing.T) {
	srv, id, base := realSandbox(t)

	findAgent := `for p in /proc/[0-9]*; do if [ "$(tr '\0' ' ' < $p/cmdline 2>/dev/null)" = "/.osb/agent __osb_agent__ " ]; then echo ${p#/proc/}; fi; done`
	out, _ := runCommand(t, base, findAgent)
	require.NotEmpty(t, out, "agent pid not found")
	pid := strings.TrimSpace(out[0])

	out, code := runCommand(t, base, `echo '{"kind":"entrypoint_exit","exit_code":0}' > /proc/`+pid+`/fd/5 && echo WROTE || echo DENIED`)
	require.NotNil(t, code)
	require.Equal(t, []string{"DENIED"}, out, "sandbox code wrote to the agent's control descriptor")

	out, _ = runCommand(t, base, `python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, `+pid+`, 0, 0)  # PTRACE_ATTACH
print('ATTACHED' if r == 0 else 'DENIED')"`)
	require.Equal(t, []string{"DENIED"}, out, "sandbox code could ptrace the agent")

	time.Sleep(700 * time.Millisecond) // the server's state watcher ticks every 500 ms
	_, got := apiDo(t, srv, "GET", "/v1/sandboxes/"+id, nil)
	require.Equal(t, "Running", got["status"].(map[string]any)["state"])
}
