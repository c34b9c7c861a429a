//go:build linux

package runtime_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/internal/uidtest"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

func TestInsecureSandboxRunsAsItsOwnUID(t *testing.T) {
	rt, base := uidtest.Runtime(t)
	grader := filepath.Join(base, "grader")
	if err := os.Mkdir(grader, 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(grader, "secret")
	if err := os.WriteFile(secret, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb1 := newSandbox(t, rt)
	sb2 := newSandbox(t, rt)
	script := fmt.Sprintf(`id -u
cat %[1]s 2>/dev/null || echo noread
touch %[2]s/planted 2>/dev/null && echo wrote || echo nowrite
kill -0 %[3]d 2>/dev/null && echo signalled || echo nosignal
echo mine > f && cat f
(cd / && setsid sh -c 'sleep 300' </dev/null >/dev/null 2>&1 &)
echo started`, secret, grader, os.Getpid())
	r := sh(t, sb1, script)
	out := r.stdout()
	want := []string{"", "noread", "nowrite", "nosignal", "mine", "started"}
	if len(out) != len(want) {
		t.Fatalf("output %q (events %+v)", out, r)
	}
	uid1, err := strconv.Atoi(out[0])
	if err != nil || uid1 < runtime.SandboxUIDBase || uid1 >= runtime.SandboxUIDBase+runtime.SandboxUIDCount {
		t.Fatalf("command uid %q: want one of [%d, %d)", out[0], runtime.SandboxUIDBase, runtime.SandboxUIDBase+runtime.SandboxUIDCount)
	}
	for i := 1; i < len(want); i++ {
		if out[i] != want[i] {
			t.Errorf("line %d: %q, want %q (all: %q)", i, out[i], want[i], out)
		}
	}
	if _, err := os.Stat(filepath.Join(grader, "planted")); err == nil {
		t.Error("the sandbox wrote into a root directory outside it")
	}
	// The agent still serves uploads into its workspace, and they are its uid's.
	if resp, body := upload(t, sb1, "/workspace/up.txt", []byte("data"), true); resp.StatusCode != 200 {
		t.Fatalf("upload %d %s", resp.StatusCode, body)
	}
	if got := sh(t, sb1, "cat up.txt; echo; echo more >> up.txt && echo appended").stdout(); len(got) != 2 || got[0] != "data" || got[1] != "appended" {
		t.Errorf("uploaded file as the sandbox uid: %q", got)
	}
	// No capabilities, no_new_privs, the rlimits.
	st := sh(t, sb1, "grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status | tr -s '\t ' ' '; ulimit -u; ulimit -c").stdout()
	wantSt := []string{"CapEff: 0000000000000000", "CapBnd: 0000000000000000", "NoNewPrivs: 1", "1024", "0"}
	if strings.Join(st, "|") != strings.Join(wantSt, "|") {
		t.Errorf("sandbox credentials and limits %q, want %q", st, wantSt)
	}
	r2 := sh(t, sb2, "id -u; cat "+filepath.Join(sb1.Dir(), "workspace", "f")+" 2>/dev/null || echo noread")
	if o := r2.stdout(); len(o) != 2 || o[0] == out[0] || o[0] == "0" || o[1] != "noread" {
		t.Errorf("second sandbox: %q (first's uid %d)", o, uid1)
	}
	if len(uidtest.Procs(uid1)) < 2 {
		t.Fatalf("the agent and the escaped sleep should run as uid %d: %v", uid1, uidtest.Procs(uid1))
	}
	if err := sb1.Destroy(); err != nil {
		t.Fatal(err)
	}
	if left := uidtest.Procs(uid1); len(left) > 0 {
		t.Errorf("processes of uid %d left after Destroy: %v", uid1, left)
	}
	if _, err := os.Stat(sb1.Dir()); !os.IsNotExist(err) {
		t.Errorf("sandbox directory left: %v", err)
	}
}

// A server that died leaves its uid sandboxes' processes; Reap by the next
// runtime on the state directory kills every process of their uids, also
// one that left the agent's tree.
func TestInsecureUIDSandboxReapedAfterCrash(t *testing.T) {
	rt, base := uidtest.Runtime(t)
	sb := newSandbox(t, rt)
	out := sh(t, sb, "id -u; (cd / && setsid sh -c 'sleep 300' </dev/null >/dev/null 2>&1 &); echo started").stdout()
	if len(out) != 2 {
		t.Fatalf("output %q", out)
	}
	uid, _ := strconv.Atoi(out[0])
	if uid < runtime.SandboxUIDBase || len(uidtest.Procs(uid)) < 2 {
		t.Fatalf("uid %d, processes %v", uid, uidtest.Procs(uid))
	}
	// The next server on the same state directory (this one "crashed": its
	// sandboxes are unknown to the new one).
	next, err := runtime.NewLinux(uidtest.Options(filepath.Join(base, "state")))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	removed, err := next.Reap()
	if err != nil {
		t.Errorf("reap: %v", err)
	}
	if left := uidtest.Procs(uid); len(left) > 0 {
		t.Errorf("processes of uid %d left after Reap: %v (removed %v)", uid, left, removed)
	}
	if _, err := os.Stat(sb.Dir()); !os.IsNotExist(err) {
		t.Errorf("sandbox directory left after Reap: %v", err)
	}
}

// Pause stops every process of a uid sandbox, also one that left the
// agent's tree; Resume restarts them.
func TestInsecureUIDSandboxPauseStopsEscapedProcesses(t *testing.T) {
	rt, _ := uidtest.Runtime(t)
	sb := newSandbox(t, rt)
	counter := filepath.Join(sb.Dir(), "workspace", "counter")
	sh(t, sb, fmt.Sprintf("(cd / && setsid sh -c 'while true; do echo x >> %s; sleep 0.05; done' </dev/null >/dev/null 2>&1 &)", counter))
	waitGrows(t, counter, 0, "before pause")
	if err := sb.Pause(); err != nil {
		t.Fatal(err)
	}
	paused := stillWhilePaused(t, counter, 200*time.Millisecond, 500*time.Millisecond) // the escaped loop too
	if err := sb.Resume(); err != nil {
		t.Fatal(err)
	}
	waitGrows(t, counter, paused, "after resume")
}

// A uid sandbox's agent dies with a SIGKILLed server (setpriv sets the
// parent-death signal again after the uid change cleared it); Reap kills
// whatever of the uid is left.
func TestInsecureUIDAgentDiesWithServer(t *testing.T) {
	_, base := uidtest.Runtime(t)
	state := filepath.Join(base, "crashed")
	h := startHelper(t, state, true)
	agent := 0
	for _, pid := range h.pids {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && strings.Contains(string(b), runtime.AgentArg) {
			agent = pid
		}
	}
	if agent == 0 {
		t.Fatalf("no agent among the sandbox's pids %v", h.pids)
	}
	uid, ok := uidtest.RealUID(agent)
	if !ok || uid < runtime.SandboxUIDBase {
		t.Fatalf("agent %d runs as uid %d", agent, uid)
	}
	h.kill()
	if !eventually(5*time.Second, func() bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", agent))
		return err != nil || strings.Contains(string(b), "State:\tZ")
	}) {
		t.Errorf("the agent (pid %d, uid %d) outlived the SIGKILLed server", agent, uid)
	}
	next, err := runtime.NewLinux(uidtest.Options(state))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if removed, err := next.Reap(); err != nil {
		t.Errorf("Reap: %v (%v)", err, removed)
	}
	if left := uidtest.Procs(uid); len(left) > 0 {
		t.Errorf("processes of uid %d left after Reap: %v", uid, left)
	}
}
