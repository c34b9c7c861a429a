//go:build linux

package runtime_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestAgentOutOfReach: sandbox code cannot write a fake entrypoint_exit into
// the agent's control descriptor, cannot read its fds or memory, and cannot
// ptrace it; the sandbox stays Running.
func TestAgentOutOfReach(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, `agent=$(for p in /proc/[0-9]*; do [ "$(cat $p/cmdline 2>/dev/null | tr '\0' ' ')" = "/.osb/agent __osb_agent__ " ] && basename $p; done | head -1)
echo "agent=$agent"
for fd in 3 4 5; do (printf '{"kind":"entrypoint_exit","exit_code":0}\n' > /proc/$agent/fd/$fd) 2>/dev/null && echo "wrote fd $fd"; done
head -c1 /proc/$agent/mem >/dev/null 2>&1 && echo "read mem"
python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(16, int(sys.argv[1]), 0, 0) == 0: print("ptrace attached")
else: print("ptrace errno", ctypes.get_errno())
' $agent`)
	out := strings.Join(r.stdout(), "\n")
	if !strings.Contains(out, "agent=") || strings.Contains(out, "agent=\n") || strings.HasSuffix(out, "agent=") {
		t.Fatalf("agent process not found inside the sandbox: %q", out)
	}
	for _, bad := range []string{"wrote fd", "read mem", "ptrace attached"} {
		if strings.Contains(out, bad) {
			t.Errorf("sandbox code reached its agent: %q", out)
		}
	}
	if !strings.Contains(out, "ptrace errno 1") {
		t.Errorf("ptrace of the agent should fail with EPERM: %q", out)
	}
	if st := sb.State(); st.State != "Running" {
		t.Errorf("state %s after the attempts, want Running", st.State)
	}
	if r := sh(t, sb, "echo alive"); !r.ok() {
		t.Errorf("agent no longer answers: %s", r.Raw)
	}
}

// TestSeccompDefaultProfile: syscalls Docker's default profile refuses answer
// EPERM (unshare, mount, keyctl, ptrace, clone with namespace flags), while
// ordinary Python and pandas work.
func TestSeccompDefaultProfile(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, `python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def errno(rc): return "ok" if rc == 0 else str(ctypes.get_errno())
print("unshare", errno(libc.unshare(0x10000000)))
print("mount", errno(libc.mount(b"none", b"/mnt", b"tmpfs", 0, None)))
print("keyctl", errno(libc.syscall(250, 0, 0, 0, 0, 0)))
print("ptrace", errno(libc.ptrace(0, 0, 0, 0)))
print("clone-newns", errno(libc.syscall(56, 0x20000 | 17, 0, 0, 0, 0) if False else libc.unshare(0x20000)))
'
python3 -c 'import pandas as pd; print("pandas", int(pd.DataFrame({"a":[1,2,3]})["a"].sum()))'`)
	got := map[string]string{}
	for _, l := range r.stdout() {
		if k, v, ok := strings.Cut(l, " "); ok {
			got[k] = v
		}
	}
	for _, k := range []string{"unshare", "mount", "keyctl", "ptrace", "clone-newns"} {
		if got[k] != "1" {
			t.Errorf("%s: got %q, want EPERM (1); output %q", k, got[k], r.stdout())
		}
	}
	if got["pandas"] != "6" {
		t.Errorf("pandas does not work under the filter: %q %s", r.stdout(), r.Raw)
	}
}

// TestRootHasDockerPowers: root can chown to nobody, move a file into a 0644
// directory, run a command as another uid/gid, but cannot open a real device
// it creates with mknod.
func TestRootHasDockerPowers(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, `cd /workspace && echo x > f && chown nobody:nogroup f && stat -c 'chown %U:%G' f
mkdir d && chmod 0644 d && mv f d/ && echo "moved $(ls d)"
mknod disk b 8 0 2>/dev/null; (head -c1 disk >/dev/null 2>&1 && echo "opened block device") || echo "block device refused"
mknod mem c 1 1 2>/dev/null; (head -c1 mem >/dev/null 2>&1 && echo "opened /dev/mem") || echo "mem refused"
head -c1 /dev/urandom >/dev/null && echo "urandom ok"`)
	out := strings.Join(r.stdout(), "\n")
	for _, want := range []string{"chown nobody:nogroup", "moved f", "block device refused", "mem refused", "urandom ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in %q (%s)", want, out, r.Raw)
		}
	}
	uid, gid := uint32(65534), uint32(65534)
	r = run(t, sb, map[string]any{"command": "id -u; id -g", "uid": uid, "gid": gid})
	if got := strings.Join(r.stdout(), " "); got != "65534 65534" {
		t.Errorf("command with uid/gid: %q (%s)", got, r.Raw)
	}
}

// TestUploadOwnedByNobody: an upload whose metadata names owner nobody
// succeeds (root has CAP_CHOWN, as in a Docker container).
func TestUploadOwnedByNobody(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="metadata"; filename="metadata"`)
	h.Set("Content-Type", "application/json")
	pw, _ := mw.CreatePart(h)
	_, _ = pw.Write([]byte(`{"path":"/workspace/owned.txt","owner":"nobody","group":"nogroup","mode":644}`))
	fw, _ := mw.CreateFormFile("file", "blob")
	_, _ = fw.Write([]byte("hello"))
	_ = mw.Close()
	resp, body := do(t, sb, http.MethodPost, "/files/upload", &buf, map[string]string{"Content-Type": mw.FormDataContentType()})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload with owner nobody: %d %s", resp.StatusCode, body)
	}
	if got := strings.Join(sh(t, sb, "stat -c %U:%G /workspace/owned.txt").stdout(), ""); got != "nobody:nogroup" {
		t.Errorf("owner %q, want nobody:nogroup", got)
	}
}

// TestPid1EnvironHasNoHostDirectory: the sandbox's pid 1 (bwrap's init)
// environment shows no host working directory.
func TestPid1EnvironHasNoHostDirectory(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	wd, _ := os.Getwd()
	r := sh(t, sb, `tr '\0' '\n' < /proc/1/environ`)
	for _, l := range r.stdout() {
		if strings.HasPrefix(l, "PWD=") && l != "PWD=/" || strings.Contains(l, wd) {
			t.Errorf("/proc/1/environ shows a host directory: %q", l)
		}
	}
}

// TestRootCannotTouchHostKernelSettings: with Docker's capabilities, root in
// the sandbox still cannot change host-wide kernel settings or reach /sys.
func TestRootCannotTouchHostKernelSettings(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	before, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
	// Each probe writes back the value already there, so a regression is
	// detected without changing the host.
	r := sh(t, sb, `v=$(cat /proc/sys/kernel/core_pattern); (printf '%s\n' "$v" > /proc/sys/kernel/core_pattern) 2>/dev/null && echo "wrote core_pattern"
v=$(cat /proc/sys/vm/swappiness); (echo "$v" > /proc/sys/vm/swappiness) 2>/dev/null && echo "wrote swappiness"
ls /sys/kernel >/dev/null 2>&1 && echo "sys visible"
test -w /proc/sysrq-trigger && echo "sysrq writable"
echo done`)
	out := strings.Join(r.stdout(), "\n")
	for _, bad := range []string{"wrote core_pattern", "wrote swappiness", "sys visible", "sysrq writable"} {
		if strings.Contains(out, bad) {
			t.Errorf("root in the sandbox reached the host kernel: %q", out)
		}
	}
	if !strings.Contains(out, "done") {
		t.Fatalf("probe did not run: %s", r.Raw)
	}
	after, _ := os.ReadFile("/proc/sys/kernel/core_pattern")
	if string(before) != string(after) {
		t.Errorf("host core_pattern changed: %q → %q", before, after)
	}
}

// TestDevNodesAreTheSandboxsOwn: root in the sandbox (CAP_FOWNER, CAP_CHOWN)
// changing /dev/null's mode or owner must not touch the host's /dev. The probe
// only re-applies the mode the node already has (0666), so even a regression
// leaves the host's node as it was; it shows up as the host node's ctime
// moving and as the sandbox's node being the host's own inode.
func TestDevNodesAreTheSandboxsOwn(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	var before unix.Stat_t
	if err := unix.Stat("/dev/null", &before); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a ctime change must be visible
	r := sh(t, sb, `for d in null zero full random urandom tty; do chmod 0666 /dev/$d || echo "chmod $d failed"; done; chown 0:0 /dev/null || echo "chown failed"
echo hi > /dev/null && echo "write ok"; head -c1 /dev/zero | od -An -tx1; stat -c 'node %d:%i' /dev/null`)
	out := strings.Join(r.stdout(), "\n")
	if !strings.Contains(out, "write ok") || strings.Contains(out, "failed") {
		t.Fatalf("device nodes unusable in the sandbox: %q (%s)", out, r.Raw)
	}
	var after unix.Stat_t
	if err := unix.Stat("/dev/null", &after); err != nil {
		t.Fatal(err)
	}
	if after.Ctim != before.Ctim {
		t.Errorf("chmod of /dev/null in the sandbox changed the host's /dev/null (ctime %v → %v)", before.Ctim, after.Ctim)
	}
	if host := fmt.Sprintf("node %d:%d", before.Dev, before.Ino); strings.Contains(out, host) {
		t.Errorf("the sandbox's /dev/null is the host's inode (%s)", host)
	}
}
