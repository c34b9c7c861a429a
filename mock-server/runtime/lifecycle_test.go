//go:build linux

package runtime_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

func TestMemoryLimitKillsAllocation(t *testing.T) {
	rt := newRuntime(t)
	if !rt.Enforced()["memory"] {
		t.Skip("memory cgroup not available on this host (Enforced()[memory]=false)")
	}
	sb := newSandbox(t, rt, withLimits(runtime.Limits{MemoryBytes: 96 << 20}))
	small := sh(t, sb, `python3 -c "b = bytearray(16 << 20); print(len(b))"`)
	if !small.ok() {
		t.Fatalf("16 MiB allocation under a 96 MiB limit failed: %s", small.Raw)
	}
	big := sh(t, sb, `python3 -c "
b = []
for i in range(64):
    b.append(bytearray(16 << 20))
print('allocated', len(b) * 16, 'MiB')"`)
	if big.ok() || strings.Contains(string(big.Raw), "allocated 1024 MiB") {
		t.Fatalf("1 GiB allocation under a 96 MiB limit succeeded: %s", big.Raw)
	}
	last := big.last()
	t.Logf("over-limit allocation ended with %+v", last.Error)
	if last.Error == nil || (last.Error.Evalue != "-1" && last.Error.Evalue != "1") {
		t.Errorf("expected OOM kill (-1) or MemoryError (1), got %+v", last)
	}
	// The agent survived: execd still answers.
	if r := sh(t, sb, "echo alive"); strings.Join(r.stdout(), "") != "alive" {
		t.Fatalf("execd gone after OOM: %s", r.Raw)
	}
}

func TestPidsLimitStopsForkBomb(t *testing.T) {
	rt := newRuntime(t)
	if !rt.Enforced()["pids"] {
		t.Skip("pids cgroup not available on this host (Enforced()[pids]=false)")
	}
	sb := newSandbox(t, rt, withLimits(runtime.Limits{Pids: 48}))
	// A bounded bomb: at most 200 children, each sleeping, then all killed.
	r := run(t, sb, map[string]any{"timeout": 30000, "command": `python3 -c "
import os, time, signal
pids = []
err = None
for i in range(200):
    try:
        p = os.fork()
    except OSError as e:
        err = e.errno
        break
    if p == 0:
        time.sleep(30)
        os._exit(0)
    pids.append(p)
for p in pids:
    os.kill(p, signal.SIGKILL)
    os.waitpid(p, 0)
print(len(pids), err)"`})
	out := strings.Fields(strings.Join(r.stdout(), " "))
	if len(out) != 2 {
		t.Fatalf("fork probe output %s", r.Raw)
	}
	n, _ := strconv.Atoi(out[0])
	t.Logf("forked %d children before errno %s", n, out[1])
	if n >= 48 || out[1] == "None" {
		t.Fatalf("forked %d children (errno %s) under a pids limit of 48", n, out[1])
	}
	if r := sh(t, sb, "echo alive"); strings.Join(r.stdout(), "") != "alive" {
		t.Fatalf("execd unusable after fork bomb: %s", r.Raw)
	}
}

func TestPauseStopsProgressResumeRestarts(t *testing.T) {
	rt := newRuntime(t)
	sb := newSandbox(t, rt)
	run(t, sb, map[string]any{"command": "while true; do echo x >> /workspace/counter; sleep 0.05; done", "background": true})
	counter := filepath.Join(sb.Dir(), "workspace", "counter")
	waitGrows(t, counter, 0, "before pause")
	if err := sb.Pause(); err != nil {
		t.Fatal(err)
	}
	if st := sb.State(); st.State != "Paused" || st.Reason != "CONTAINER_PAUSED" {
		t.Errorf("state while paused %+v", st)
	}
	if err := sb.Pause(); !errors.Is(err, runtime.ErrAlreadyPaused) {
		t.Errorf("second pause: %v", err)
	}
	s1 := stillWhilePaused(t, counter, 0, 700*time.Millisecond)
	if err := sb.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Resume(); !errors.Is(err, runtime.ErrNotPaused) {
		t.Errorf("second resume: %v", err)
	}
	waitGrows(t, counter, s1, "after resume")
	if st := sb.State(); st.State != "Running" {
		t.Errorf("state after resume %+v", st)
	}
	if r := sh(t, sb, "echo back"); strings.Join(r.stdout(), "") != "back" {
		t.Errorf("execd after resume: %s", r.Raw)
	}
}

// leftovers lists what remains of a sandbox on the host.
func leftovers(id, dir string, pids []int) []string {
	var out []string
	for _, p := range pids {
		if err := syscall.Kill(p, 0); err == nil {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat"); !strings.Contains(string(b), ") Z ") {
				out = append(out, "process "+strconv.Itoa(p))
			}
		}
	}
	if _, err := os.Stat("/run/netns/osb-" + id[:12]); err == nil {
		out = append(out, "netns osb-"+id[:12])
	}
	for _, c := range []string{"memory", "pids", "cpu", "freezer"} {
		if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c, "osb", id)); err == nil {
			out = append(out, "cgroup "+c)
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/osb", id)); err == nil {
		out = append(out, "cgroup v2")
	}
	if _, err := os.Stat(dir); err == nil {
		out = append(out, "dir "+dir)
	}
	return out
}

func TestDestroyLeavesNothing(t *testing.T) {
	rt := newRuntime(t)
	sb := newSandbox(t, rt, withLimits(runtime.Limits{MemoryBytes: 256 << 20, Pids: 128, CPUMilli: 500}))
	run(t, sb, map[string]any{"command": "sleep 300 & sleep 300 & setsid sleep 300 & wait", "background": true})
	var pids []int
	eventually(30*time.Second, func() bool { pids = sb.Pids(); return len(pids) >= 4 })
	if len(pids) < 4 {
		t.Fatalf("expected agent, entrypoint and sleeps, got pids %v", pids)
	}
	for file, want := range map[string]string{
		"memory/osb/" + sb.ID() + "/memory.limit_in_bytes": "268435456",
		"pids/osb/" + sb.ID() + "/pids.max":                "128",
		"cpu/osb/" + sb.ID() + "/cpu.cfs_quota_us":         "50000",
	} {
		b, err := os.ReadFile(filepath.Join("/sys/fs/cgroup", file))
		if err == nil && strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %q, want %s", file, b, want)
		}
	}
	if err := sb.Pause(); err != nil { // destroying a frozen sandbox must work too
		t.Fatal(err)
	}
	if left := leftovers(sb.ID(), sb.Dir(), nil); len(left) == 0 || left[len(left)-1] != "dir "+sb.Dir() {
		t.Fatalf("probe broken: %v", left)
	}
	if err := sb.Destroy(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(sb.ID(), sb.Dir(), pids); len(left) > 0 {
		t.Fatalf("leaked after Destroy: %v", left)
	}
	if err := sb.Destroy(); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
	if st := sb.State(); st.State != "Terminated" {
		t.Errorf("state after Destroy %+v", st)
	}
}

func TestReapCleansKilledServerLeftovers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("needs root (euid %d)", os.Geteuid())
	}
	state := t.TempDir()
	old, err := runtime.NewLinux(runtime.Options{StateDir: state})
	if err != nil {
		t.Skipf("isolation unavailable: %v", err)
	}
	// The "killed" server: its sandbox is abandoned, never destroyed.
	prof, _ := runtime.ProfileFor("debian")
	id := uuid.NewString()
	sb, err := old.Create(context.Background(), runtime.Spec{ID: id, Profile: prof, Entrypoint: []string{"sleep", "600"},
		Limits: runtime.Limits{Pids: 64}})
	if err != nil {
		t.Fatal(err)
	}
	pids := sb.Pids()
	dir := sb.Dir()
	if len(leftovers(id, dir, pids)) < 3 {
		t.Fatalf("probe broken: %v", leftovers(id, dir, pids))
	}
	fresh, err := runtime.NewLinux(runtime.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	removed, err := fresh.Reap()
	if err != nil {
		t.Fatalf("reap: %v (removed %v)", err, removed)
	}
	joined := strings.Join(removed, "\n")
	for _, want := range []string{"process ", "netns osb-" + id[:12], "cgroup ", "dir " + dir} {
		if !strings.Contains(joined, want) {
			t.Errorf("Reap did not report %q: %v", want, removed)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(leftovers(id, dir, pids)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if left := leftovers(id, dir, pids); len(left) > 0 {
		t.Fatalf("left after Reap: %v", left)
	}
	if again, _ := fresh.Reap(); len(again) != 0 {
		t.Errorf("second Reap found %v", again)
	}
	_ = sb.Destroy() // the abandoned handle: must not fail badly on a reaped sandbox
}

func TestEntrypointExitState(t *testing.T) {
	rt := newRuntime(t)
	cases := []struct {
		ep     []string
		state  string
		reason string
		code   int
	}{
		{[]string{"sh", "-c", "sleep 0.2; exit 0"}, "Terminated", "CONTAINER_EXITED", 0},
		{[]string{"sh", "-c", "sleep 0.2; exit 3"}, "Failed", "CONTAINER_EXITED_ERROR", 3},
		{[]string{"/no/such/binary"}, "Failed", "CONTAINER_EXITED_ERROR", 127},
	}
	for _, c := range cases {
		sb := newSandbox(t, rt, withEntrypoint(c.ep...))
		deadline := time.Now().Add(10 * time.Second)
		st := sb.State()
		for st.State == "Running" && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
			st = sb.State()
		}
		if st.State != c.state || st.Reason != c.reason || st.ExitCode != c.code {
			t.Errorf("%v → %+v", c.ep, st)
		}
		// execd keeps serving after the main process ended (documented choice).
		if r := sh(t, sb, "echo still"); strings.Join(r.stdout(), "") != "still" {
			t.Errorf("%v: execd after entrypoint exit: %s", c.ep, r.Raw)
		}
		if err := sb.Pause(); !errors.Is(err, runtime.ErrNotRunning) {
			t.Errorf("pause of an exited sandbox: %v", err)
		}
	}
}

func TestCreateFailsCleanly(t *testing.T) {
	rt := newRuntime(t)
	prof, _ := runtime.ProfileFor("debian")
	for _, spec := range []runtime.Spec{
		{ID: "../evil", Profile: prof},
		{ID: uuid.NewString(), Profile: prof, Env: map[string]string{"A=B": "x"}},
		{ID: uuid.NewString(), Profile: prof, GatewaySocket: "/nonexistent/gw.sock"},
	} {
		if _, err := rt.Create(context.Background(), spec); err == nil {
			t.Errorf("create %+v succeeded", spec)
		}
		if spec.ID != "../evil" {
			if left := leftovers(spec.ID, filepath.Join(rt.StateDir(), "sandboxes", spec.ID), nil); len(left) > 0 {
				t.Errorf("failed create leaked %v", left)
			}
		}
	}
}

func TestCreateRefusesLeftoverDirWithoutTouchingIt(t *testing.T) {
	rt := newRuntime(t)
	id := uuid.NewString()
	dir := filepath.Join(rt.StateDir(), "sandboxes", id)
	if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o700); err != nil {
		t.Fatal(err)
	}
	prof, _ := runtime.ProfileFor("debian")
	if _, err := rt.Create(context.Background(), runtime.Spec{ID: id, Profile: prof}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("create over a leftover: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace")); err != nil {
		t.Fatalf("failed create removed a directory it did not own: %v", err)
	}
	removed, err := rt.Reap()
	if err != nil || len(removed) == 0 {
		t.Fatalf("Reap: %v %v", removed, err)
	}
}

func TestInsecureModeIsExplicit(t *testing.T) {
	rt, err := runtime.NewLinux(runtime.Options{StateDir: t.TempDir(), ForceInsecure: true})
	if err == nil || !strings.Contains(err.Error(), "insecure-no-isolation") {
		t.Fatalf("forced insecure without permission: %v", err)
	}
	rt, err = runtime.NewLinux(runtime.Options{StateDir: t.TempDir(), ForceInsecure: true, AllowInsecureNoIsolation: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	if ok, reason := rt.Isolation(); ok || reason == "" {
		t.Fatalf("Isolation() = %v %q", ok, reason)
	}
	if rt.Enforced()["memory"] || rt.Enforced()["network"] {
		t.Errorf("insecure mode claims enforcement: %v", rt.Enforced())
	}
	t.Setenv("OSB_HOST_CANARY", "canary-insecure")
	sb := newSandbox(t, rt, withEnv(map[string]string{"REQ": "yes"}))
	r := sh(t, sb, "echo $REQ; env | grep -c OSB_HOST_CANARY; pwd")
	out := r.stdout()
	if len(out) != 3 || out[0] != "yes" || out[1] != "0" || out[2] != filepath.Join(sb.Dir(), "workspace") {
		t.Errorf("insecure command output %q", out)
	}
	if resp, body := upload(t, sb, "/workspace/f.txt", []byte("data"), true); resp.StatusCode != 200 {
		t.Fatalf("upload %d %s", resp.StatusCode, body)
	}
	if b, err := os.ReadFile(filepath.Join(sb.Dir(), "workspace", "f.txt")); err != nil || string(b) != "data" {
		t.Errorf("insecure upload landed elsewhere: %v %q", err, b)
	}
	pids := sb.Pids()
	if err := sb.Destroy(); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(sb.ID(), sb.Dir(), pids); len(left) > 0 {
		t.Errorf("insecure leak: %v", left)
	}
}

func TestIDsSharingAPrefixGetTheirOwnNetns(t *testing.T) {
	rt := newRuntime(t)
	prof, _ := runtime.ProfileFor("debian")
	suffix := strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	var sbs []runtime.Sandbox
	for _, n := range []string{"1", "2"} {
		sb, err := rt.Create(context.Background(), runtime.Spec{ID: "prefixclash-" + suffix + "-" + n, Profile: prof, Entrypoint: []string{"sleep", "600"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sb.Destroy() })
		sbs = append(sbs, sb)
	}
	// b listens on a port inside its namespace; a must not reach it.
	run(t, sbs[1], map[string]any{"command": "python3 -m http.server 8099 --bind 127.0.0.1", "background": true})
	probe := `python3 -c "
import socket; s = socket.socket(); s.settimeout(2)
try:
    s.connect(('127.0.0.1', 8099)); print('open')
except Exception:
    print('closed')"`
	// The server starts in the background: wait until b reaches it (a loaded machine may take seconds to
	// start python), so the check on a below runs against a listening server, not a slow start.
	for deadline := time.Now().Add(60 * time.Second); ; {
		r := sh(t, sbs[1], probe)
		if strings.Join(r.stdout(), "") == "open" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("probe broken: b cannot reach its own server within 60s: %s", r.Raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := sh(t, sbs[0], probe); strings.Join(r.stdout(), "") != "closed" {
		t.Fatalf("sandboxes share a network namespace: %s", r.Raw)
	}
	if err := sbs[0].Destroy(); err != nil {
		t.Fatal(err)
	}
	if r := sh(t, sbs[1], probe); strings.Join(r.stdout(), "") != "open" {
		t.Fatalf("destroying a broke b's network: %s", r.Raw)
	}
}

// TestCloseDuringCreateLeavesNothing: a runtime closed while a sandbox is
// still starting (a server stopped mid-provision) leaves no namespace, no
// cgroup and no directory of it. Close's Destroy used to run alongside the
// start: it found no namespace yet and removed the directory being filled;
// the start then made the namespace, failed, and its own Destroy found the
// sandbox already gone, so the osb-* namespace stayed on the machine.
func TestCloseDuringCreateLeavesNothing(t *testing.T) {
	rt := newRuntime(t)
	prof, err := runtime.ProfileFor("python:3.11")
	if err != nil {
		t.Fatal(err)
	}
	id := uuid.NewString()
	dir := filepath.Join(rt.StateDir(), "sandboxes", id)
	done := make(chan error, 1)
	go func() {
		// A start that finishes before the close begins is a sandbox like
		// any other: the close removes it (the check below), so it is not
		// destroyed here.
		_, err := rt.Create(context.Background(), runtime.Spec{ID: id, Profile: prof, Entrypoint: []string{"tail", "-f", "/dev/null"}})
		done <- err
	}()
	// Close once the start has begun (its directory exists).
	if !eventually(30*time.Second, func() bool { _, err := os.Stat(dir); return err == nil }) {
		t.Fatal("the sandbox's start never began (30s)")
	}
	if err := rt.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	select {
	case err := <-done:
		// Either the close overtook the start (which then fails, saying
		// so) or the start finished first; either way nothing is left.
		if err != nil && !strings.Contains(err.Error(), "closed") {
			t.Errorf("a create the close overtook: %v", err)
		}
		t.Logf("the start ended with: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("create never returned after close (60s)")
	}
	if left := leftovers(id, dir, nil); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestInsecureWorkspaceLinkIsEachSandboxsOwn: without a mount namespace a
// sandbox has no /workspace of its own, so the course's `cd /workspace &&
// python3 analyze.py` failed in every insecure sandbox (Gradescope's
// container: every analysis exited 1 in 3 ms). The workspace link (here at
// a path of the test's: the real one is /workspace) resolves through the
// descriptor each sandbox's processes hold, so two sandboxes each find
// their own files there, in commands and in what those commands start, and
// the same path names nothing for a process that holds no descriptor.
func TestInsecureWorkspaceLinkIsEachSandboxsOwn(t *testing.T) {
	link := filepath.Join(t.TempDir(), "workspace")
	rt, err := runtime.NewLinux(runtime.Options{StateDir: t.TempDir(), ForceInsecure: true, AllowInsecureNoIsolation: true, WorkspaceLink: link})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	if _, reason := rt.Isolation(); !strings.Contains(reason, "/workspace is each sandbox's own workspace") {
		t.Errorf("Isolation() reason does not say the link is there: %q", reason)
	}
	if got, err := os.Readlink(link); err != nil || got != "/proc/self/fd/63" {
		t.Fatalf("the link: %q %v", got, err)
	}
	var sbs []runtime.Sandbox
	for _, name := range []string{"one", "two"} {
		sb := newSandbox(t, rt)
		if resp, body := upload(t, sb, "/workspace/who.txt", []byte(name), true); resp.StatusCode != 200 {
			t.Fatalf("upload %d %s", resp.StatusCode, body)
		}
		sbs = append(sbs, sb)
	}
	for i, name := range []string{"one", "two"} {
		r := sh(t, sbs[i], "cd "+link+" && cat who.txt && echo && pwd -P && python3 -c 'print(open(\""+link+"/who.txt\").read())' && bash -c 'cat "+link+"/who.txt'")
		out := r.stdout()
		want := []string{name, filepath.Join(sbs[i].Dir(), "workspace"), name, name}
		if strings.Join(out, "|") != strings.Join(want, "|") {
			t.Errorf("sandbox %s sees %q through the link, want %q (%s)", name, out, want, r.Raw)
		}
	}
	if _, err := os.ReadFile(filepath.Join(link, "who.txt")); err == nil {
		t.Errorf("a process holding no workspace descriptor reads a sandbox's file through the link")
	}
	// An existing /workspace that is not the link is left alone, and said.
	other := filepath.Join(t.TempDir(), "workspace")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	rt2, err := runtime.NewLinux(runtime.Options{StateDir: t.TempDir(), ForceInsecure: true, AllowInsecureNoIsolation: true, WorkspaceLink: other})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt2.Close() })
	if _, reason := rt2.Isolation(); !strings.Contains(reason, "commands that name /workspace literally do not work") {
		t.Errorf("an occupied path: %q", reason)
	}
	if st, err := os.Lstat(other); err != nil || !st.IsDir() {
		t.Errorf("the directory at the link's path was touched: %v", err)
	}
}
