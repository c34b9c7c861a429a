//go:build linux

package runtime_test

import (
	"bytes"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// TestDiskLimit: a sandbox cannot write more than the configured disk limit
// (a command gets ENOSPC; an upload that does not fit answers 507), and the
// default is 1 GiB.
func TestDiskLimit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("not measured: the disk limit needs root (euid %d)", os.Geteuid())
	}
	const limit = 32 << 20
	rt, err := runtime.NewLinux(runtime.Options{StateDir: t.TempDir(), DiskLimitBytes: limit})
	if err != nil {
		t.Skipf("isolation unavailable: %v", err)
	}
	t.Cleanup(func() { _ = rt.Close() })
	if got := rt.DiskLimit(); got != limit {
		t.Fatalf("DiskLimit %d, want %d", got, limit)
	}
	if !rt.Enforced()["disk"] {
		t.Fatal("disk limit not reported as enforced")
	}
	sb := newSandbox(t, rt)
	r := sh(t, sb, `dd if=/dev/zero of=/workspace/big bs=1M count=64 2>&1 | grep -o "No space left on device" | head -1; stat -c %s /workspace/big`)
	out := strings.Join(r.stdout(), "\n")
	if !strings.Contains(out, "No space left") {
		t.Errorf("writing 64 MiB under a 32 MiB limit: %q", out)
	}
	lines := r.stdout()
	if n, err := strconv.ParseInt(lines[len(lines)-1], 10, 64); err != nil || n > limit {
		t.Errorf("file size %q exceeds the limit", lines[len(lines)-1])
	}
	sh(t, sb, "rm -f /workspace/big; dd if=/dev/zero of=/tmp/fill bs=1M count=20 2>/dev/null")
	resp, body := upload(t, sb, "/workspace/up.bin", bytes.Repeat([]byte("x"), 20<<20), true)
	if resp.StatusCode != http.StatusInsufficientStorage {
		t.Errorf("upload beyond the limit (tmp and workspace share it): %d %s", resp.StatusCode, body)
	}

	def, err := runtime.NewLinux(runtime.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	if def.DiskLimit() != runtime.DefaultDiskLimit || runtime.DefaultDiskLimit > 1<<30 {
		t.Errorf("default disk limit %d", def.DiskLimit())
	}
}
