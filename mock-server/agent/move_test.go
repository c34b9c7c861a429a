package agent

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestMoveAcrossMounts: a move the agent has to copy (the source and the
// destination on different mounts) refuses what rename(2) refuses in a
// container, never copies without end, and leaves nothing behind when the
// copy fails. Moving "/" to "/workspace/root" once copied the sandbox's root
// into itself (26 MB of it, /proc included) and left it there with a 500.
func TestMoveAcrossMounts(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(filepath.Join(src, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "sub", "a.txt"), []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	copied := 0
	failAfter := -1 // copies fail once this many happened (-1: never)
	copyFn := func(s, d string) error {
		if failAfter >= 0 && copied >= failAfter {
			if err := os.MkdirAll(filepath.Join(d, "half"), 0o755); err != nil {
				t.Fatal(err)
			}
			return errors.New("write: no space left on device")
		}
		copied++
		return copyTree(s, d)
	}

	// into its own subtree: EINVAL, nothing copied
	err := moveAcrossWith(src, filepath.Join(src, "sub", "inside"), copyFn)
	if !errors.Is(err, syscall.EINVAL) || copied != 0 {
		t.Fatalf("move into own subtree: %v (copies %d)", err, copied)
	}
	err = moveAcrossWith("/", filepath.Join(dir, "root"), copyFn)
	if !errors.Is(err, syscall.EINVAL) || copied != 0 {
		t.Fatalf("move /: %v (copies %d)", err, copied)
	}
	// a mount point, or a tree holding one: EBUSY, nothing copied
	for _, mp := range []string{"/proc", "/sys"} {
		err := moveAcrossWith(mp, filepath.Join(dir, "root"), copyFn)
		if !errors.Is(err, syscall.EBUSY) || copied != 0 {
			t.Fatalf("move %s: %v (copies %d)", mp, err, copied)
		}
	}
	if _, err := os.Lstat(filepath.Join(dir, "root")); !os.IsNotExist(err) {
		t.Fatalf("a refused move left its destination: %v", err)
	}
	// a copy failing half-way: the partial destination is removed, the source kept
	failAfter = 0
	dst := filepath.Join(dir, "dst")
	if err := moveAcrossWith(src, dst, copyFn); err == nil {
		t.Fatal("the failed copy was reported as a move")
	}
	if _, err := os.Lstat(dst); !os.IsNotExist(err) {
		t.Fatalf("a failed copy left %s behind: %v", dst, err)
	}
	if b, err := os.ReadFile(filepath.Join(src, "sub", "a.txt")); err != nil || string(b) != "a" {
		t.Fatalf("the source was lost: %q %v", b, err)
	}
	// and a move that works: copied, the source removed
	failAfter = -1
	if err := moveAcrossWith(src, dst, copyFn); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "sub", "a.txt")); err != nil || string(b) != "a" {
		t.Fatalf("moved file: %q %v", b, err)
	}
	if _, err := os.Lstat(src); !os.IsNotExist(err) {
		t.Fatalf("the source is still there: %v", err)
	}
}

func TestUnescapeMountinfo(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/x\134y`: `/x\y`, `/plain`: "/plain", `/tail\04`: `/tail\04`} {
		if got := unescapeMountinfo(in); got != want {
			t.Errorf("unescapeMountinfo(%q) = %q, want %q", in, got, want)
		}
	}
}
