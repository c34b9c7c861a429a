//go:build linux

// Package uidtest is the bundled server's tests' set-up for insecure-mode uid
// sandboxes (mock-server/runtime, uid_linux.go), shared by the runtime's tests
// and the server's: Runtime is an insecure runtime as root whose sandboxes
// run as uids of their own; Procs and RealUID read a uid's processes from
// /proc, independently of the runtime's own sweep. For tests only; like the
// rest of mock-server/ it imports nothing of the grader.
package uidtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// Runtime is an insecure runtime as root on base/state, base being a fresh
// directory that other uids can traverse (t.TempDir's top directory is
// 0700), closed when t ends. It skips in -short mode and when not root, and
// fails t if the runtime does not give its sandboxes uids of their own.
func Runtime(t testing.TB) (rt *runtime.Linux, base string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short starts no sandbox")
	}
	if os.Geteuid() != 0 {
		t.Skipf("uid sandboxes need root (euid is %d)", os.Geteuid())
	}
	base = t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	rt, err := runtime.NewLinux(Options(filepath.Join(base, "state")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	if !rt.Enforced()["own_uid"] {
		_, why := rt.Isolation()
		t.Fatalf("insecure mode as root does not run sandboxes as their own uid: %s", why)
	}
	return rt, base
}

// Options are an insecure runtime's on stateDir (the next server on a
// crashed one's state directory uses the same).
func Options(stateDir string) runtime.Options {
	return runtime.Options{StateDir: stateDir, ForceInsecure: true, AllowInsecureNoIsolation: true}
}

// Procs lists the live processes whose real uid is uid (zombies aside: they
// run nothing).
func Procs(uid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if u, ok := RealUID(pid); ok && u == uid {
			out = append(out, pid)
		}
	}
	return out
}

// RealUID is pid's real uid; false for a zombie (it runs nothing) or a
// process gone.
func RealUID(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	st := map[string][]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			st[k] = strings.Fields(v)
		}
	}
	if state := st["State"]; len(state) == 0 || state[0] == "Z" || len(st["Uid"]) == 0 {
		return 0, false
	}
	uid, err := strconv.Atoi(st["Uid"][0])
	return uid, err == nil
}
