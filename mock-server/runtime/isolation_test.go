//go:build linux

package runtime_test

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// plantHostFile writes a secret outside every path a sandbox may see.
func plantHostFile(t *testing.T) (string, string) {
	t.Helper()
	secret := fmt.Sprintf("host-secret-%d", time.Now().UnixNano())
	p := filepath.Join(t.TempDir(), "planted-secret.txt")
	if err := os.WriteFile(p, []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, secret
}

func TestPathTraversalAndSymlinksStayInside(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	planted, secret := plantHostFile(t)
	hostPasswd, _ := os.ReadFile("/etc/passwd")

	for _, p := range []string{"../../etc/shadow", "/workspace/../../../etc/shadow", planted, "../../" + planted} {
		resp, body := get(t, sb, "/files/download?path="+url.QueryEscape(p), nil)
		if strings.Contains(string(body), secret) || (resp.StatusCode == 200 && len(body) > 0) {
			t.Errorf("download %q → %d %q", p, resp.StatusCode, body)
		}
	}
	// Symlinks created inside point into the sandbox's own view.
	_ = sh(t, sb, "ln -s /etc/passwd /workspace/pw; ln -s "+planted+" /workspace/planted; ln -s ../../../../../../etc/passwd /workspace/up")
	for _, link := range []string{"/workspace/pw", "/workspace/up"} {
		resp, body := get(t, sb, "/files/download?path="+link, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("download %s → %d %s", link, resp.StatusCode, body)
		}
		if string(body) == string(hostPasswd) || !strings.HasPrefix(string(body), "root:x:0:0:root:/root:") || strings.Count(string(body), "\n") > 2 {
			t.Errorf("symlink %s reached a passwd that is not the sandbox's generated one: %q", link, body)
		}
	}
	resp, body := get(t, sb, "/files/download?path=/workspace/planted", nil)
	if resp.StatusCode != 404 || strings.Contains(string(body), secret) {
		t.Errorf("symlink to the planted host file → %d %q", resp.StatusCode, body)
	}
	if resp, _ := get(t, sb, "/files/download?path=/workspace/a%00b", nil); resp.StatusCode != 400 {
		t.Errorf("NUL in path → %d", resp.StatusCode)
	}
	// Upload through ../ lands inside the sandbox root, never on the host.
	escape := filepath.Join(filepath.Dir(planted), "escaped.txt")
	if resp, body := upload(t, sb, "../../../../../../.."+escape, []byte("x"), true); resp.StatusCode == 200 {
		if _, err := os.Stat(escape); err == nil {
			t.Fatalf("upload escaped to the host: %s", escape)
		}
	} else if resp.StatusCode >= 500 {
		t.Errorf("upload outside → %d %s", resp.StatusCode, body)
	}
}

func TestIsolationHostEnvNotVisible(t *testing.T) {
	t.Setenv("OSB_HOST_CANARY", "canary-7d1f")
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, "env; cat /proc/1/environ /proc/self/environ 2>/dev/null | tr '\\0' '\\n'")
	if strings.Contains(string(r.Raw), "canary-7d1f") || strings.Contains(string(r.Raw), "OSB_HOST_CANARY") {
		t.Fatalf("host env leaked into the sandbox: %s", r.Raw)
	}
}

func TestIsolationHostFileNotReadable(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	planted, secret := plantHostFile(t)
	r := sh(t, sb, "cat "+planted+"; ls "+filepath.Dir(planted)+"; cat /proc/1/root"+planted+"; grep -r "+secret+" /tmp /workspace /root /etc 2>/dev/null")
	if strings.Contains(string(r.Raw), secret) {
		t.Fatalf("planted host file readable: %s", r.Raw)
	}
	if r.ok() {
		t.Errorf("reading the planted path succeeded: %s", r.Raw)
	}
	// The host's own /etc is not there either.
	if r := sh(t, sb, "test -e /etc/shadow || test -e /etc/hostname.host || test -d /home/"); r.ok() {
		t.Errorf("host files visible: %s", r.Raw)
	}
}

func TestIsolationReadOnlyOutsideWorkspaceAndTmp(t *testing.T) {
	rt := newRuntime(t)
	sb := newSandbox(t, rt)
	for _, p := range []string{"/x", "/etc/x", "/usr/x", "/usr/bin/x", "/bin/x", "/opt/x", "/proc/x", "/.osb/x", "/etc/ssl/x", "/dev/x", "/dev/pts/x", "/run/x"} {
		if r := sh(t, sb, "echo pwned > "+p); r.ok() {
			t.Errorf("could write %s", p)
		}
	}
	for _, p := range []string{"/workspace/ok", "/tmp/ok"} {
		if r := sh(t, sb, "echo fine > "+p); !r.ok() {
			t.Errorf("could not write %s: %s", p, r.Raw)
		}
	}
	if _, err := os.Stat(filepath.Join(sb.Dir(), "workspace", "ok")); err != nil {
		t.Errorf("workspace write not on the sandbox dir: %v", err)
	}
	// /root and /dev/shm are writable too, and on the sandbox's own storage
	// (where the disk limit holds and the canary scan looks: runtime.Writable).
	for p, host := range map[string]string{"/root/ok": "home/ok", "/dev/shm/ok": "shm/ok"} {
		if r := sh(t, sb, "echo fine > "+p); !r.ok() {
			t.Errorf("could not write %s: %s", p, r.Raw)
		} else if _, err := os.Stat(filepath.Join(sb.Dir(), host)); err != nil {
			t.Errorf("%s not on the sandbox's own storage: %v", p, err)
		}
	}
	// /var is writable, as in a Docker container, but private: the sandbox's
	// own copy on its own storage, never the host's /var, never another
	// sandbox's.
	name := fmt.Sprintf("osb-var-probe-%d", time.Now().UnixNano())
	if r := sh(t, sb, "echo mine > /var/"+name+" && mkdir -p /var/tmp/d && cd /var/tmp && pwd && cat /var/"+name); !r.ok() || !strings.Contains(string(r.Raw), "mine") {
		t.Fatalf("could not write /var/%s or use /var/tmp: %s", name, r.Raw)
	}
	if _, err := os.Lstat("/var/" + name); !os.IsNotExist(err) {
		t.Errorf("a sandbox write to /var/%s reached the host's /var (lstat: %v)", name, err)
	}
	if _, err := os.Stat(filepath.Join(sb.Dir(), "var", name)); err != nil {
		t.Errorf("/var write not on the sandbox's own storage: %v", err)
	}
	other := newSandbox(t, rt)
	if r := sh(t, other, "ls -a /var; test -e /var/"+name+" && echo SEEN"); strings.Contains(string(r.Raw), "SEEN") {
		t.Errorf("another sandbox sees /var/%s: %s", name, r.Raw)
	}
	if r := sh(t, other, "test -d /var/tmp && test -w /var/tmp && test -k /var/tmp && echo OK"); !strings.Contains(string(r.Raw), "OK") {
		t.Errorf("a fresh sandbox has no sticky, writable /var/tmp: %s", r.Raw)
	}
}

func TestIsolationNoHostLoopback(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	r := sh(t, sb, fmt.Sprintf(`python3 -c "
import socket
s = socket.socket(); s.settimeout(3)
try:
    s.connect(('127.0.0.1', %d)); print('CONNECTED')
except Exception as e:
    print('refused', type(e).__name__)
"; ip -o link 2>/dev/null | cut -d: -f2`, port))
	t.Logf("probe output: %q", r.stdout())
	if strings.Contains(string(r.Raw), "CONNECTED") || accepted.Load() != 0 {
		t.Fatalf("sandbox reached the host's 127.0.0.1:%d: %s", port, r.Raw)
	}
	for _, l := range r.stdout() {
		if strings.TrimSpace(l) != "lo" && !strings.HasPrefix(l, "refused") {
			t.Errorf("unexpected interface or output %q", l)
		}
	}
}

// TestIsolationDockerCapabilities: root in the sandbox holds exactly Docker's
// default capability set (CapEff/CapPrm/CapBnd a80425fb; ambient: none or the same),
// and still cannot mount.
func TestIsolationDockerCapabilities(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status")
	if len(r.stdout()) != 4 {
		t.Fatalf("capability lines %v", r.stdout())
	}
	for _, l := range r.stdout() {
		want := "00000000a80425fb"
		if strings.HasPrefix(l, "CapAmb") && strings.HasSuffix(l, "0000000000000000") {
			continue // bwrap passes the set as ambient capabilities; Docker does not
		}
		if !strings.HasSuffix(l, want) {
			t.Errorf("%s, want %s (Docker's default set)", l, want)
		}
	}
	if r := sh(t, sb, "mount -t tmpfs none /mnt 2>&1 || mount -t tmpfs none /tmp/x 2>&1"); r.ok() {
		t.Errorf("mount succeeded: %s", r.Raw)
	}
}

func TestIsolationSandboxesSeparate(t *testing.T) {
	rt := newRuntime(t)
	a := newSandbox(t, rt)
	b := newSandbox(t, rt)
	if r := sh(t, a, "echo only-in-a > /workspace/a.txt; echo tmp-a > /tmp/a.txt"); !r.ok() {
		t.Fatal(string(r.Raw))
	}
	run(t, a, map[string]any{"command": "exec -a osb-marker-a sleep 300", "background": true})
	time.Sleep(200 * time.Millisecond)
	r := sh(t, b, "cat /workspace/a.txt /tmp/a.txt "+filepath.Join(a.Dir(), "workspace", "a.txt")+" 2>&1; for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done")
	if strings.Contains(string(r.Raw), "only-in-a") || strings.Contains(string(r.Raw), "tmp-a") {
		t.Errorf("sandbox b read a's files: %s", r.Raw)
	}
	if strings.Contains(string(r.Raw), "osb-marker-a") {
		t.Errorf("sandbox b sees a's processes: %s", r.Raw)
	}
	// a does see its own process, so the probe is meaningful.
	if r := sh(t, a, "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done"); !strings.Contains(string(r.Raw), "osb-marker-a") {
		t.Errorf("probe broken: a cannot see its own marker process: %s", r.Raw)
	}
}

// The python profile is what the capstone needs: pandas and a headless
// matplotlib writing a PNG into the workspace.
func TestPythonProfilePandasMatplotlib(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, `python3 -c "
import pandas as pd, matplotlib.pyplot as plt
df = pd.DataFrame({'x': [1, 2, 3], 'y': [2, 4, 8]})
df.plot(x='x', y='y'); plt.savefig('/workspace/chart.png')
print(int(df.y.sum()))"`)
	if !r.ok() || strings.Join(r.stdout(), "") != "14" {
		t.Fatalf("pandas/matplotlib: %s", r.Raw)
	}
	b, err := os.ReadFile(filepath.Join(sb.Dir(), "workspace", "chart.png"))
	if err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Fatalf("chart.png: %v (%d bytes)", err, len(b))
	}
}

// Request env values never appear on a host-visible command line.
func TestRequestEnvNotOnHostCommandLines(t *testing.T) {
	sb := newSandbox(t, newRuntime(t), withEnv(map[string]string{"API_TOKEN": "tok-5e3cret-91"}))
	if r := sh(t, sb, "echo $API_TOKEN"); strings.Join(r.stdout(), "") != "tok-5e3cret-91" {
		t.Fatalf("env not delivered: %s", r.Raw)
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), "tok-5e3cret-91") {
			t.Errorf("pid %s shows the secret in its command line: %q", e.Name(), b)
		}
	}
}

// A python sandbox has `python` (and pip) on PATH as the python:3.x images
// do, /etc/os-release as every Debian-based image has, and none of the
// host's /usr/local/bin tools; a debian sandbox has /etc/os-release too.
func TestImageFilesPythonOnPathAndOsRelease(t *testing.T) {
	rt := newRuntime(t)
	sb := newSandbox(t, rt)
	r := sh(t, sb, `cd /workspace && printf 'import sys\nprint("py", sys.version_info[0])\n' > s.py && python s.py && command -v python pip && . /etc/os-release && echo "os=$ID" && ls /usr/local/bin | tr '\n' ' '`)
	out := strings.Join(r.stdout(), "")
	if !r.ok() || !strings.Contains(out, "py 3") || !strings.Contains(out, "/usr/local/bin/python") ||
		!strings.Contains(out, "/usr/local/bin/pip") || !strings.Contains(out, "os=debian") {
		t.Fatalf("python sandbox: %s", r.Raw)
	}
	entries, _ := os.ReadDir("/usr/local/bin")
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "python") && !strings.HasPrefix(e.Name(), "pip") && !strings.HasPrefix(e.Name(), "pydoc") &&
			strings.Contains(out, e.Name()+" ") {
			t.Errorf("host tool /usr/local/bin/%s visible in a python sandbox: %s", e.Name(), out)
		}
	}
	deb := newSandbox(t, rt, func(s *runtime.Spec) {
		p, err := runtime.ProfileFor("debian:bookworm")
		if err != nil {
			t.Fatal(err)
		}
		s.Profile = p
	})
	r = sh(t, deb, `. /etc/os-release && echo "os=$ID"`)
	if !r.ok() || strings.Join(r.stdout(), "") != "os=debian" {
		t.Fatalf("debian sandbox: %s", r.Raw)
	}
}
