//go:build linux

package dockertarget

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The host-side watch of a sandbox's directory, on a directory standing in
// for a container's overlay upper directory: what was there at arming is
// present; a name created later is created, even one removed at once; the
// directory may appear only after arming (overlay copies it up on the first
// write), and everything in it then was created after arming.
func TestWatchUpperSeesEveryNameCreated(t *testing.T) {
	waitFor := func(w *FileWatch, n int) []FileCreated {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, err := w.Created()
			if err != nil {
				t.Fatal(err)
			}
			if len(got) >= n || time.Now().After(deadline) {
				return got
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	upper := t.TempDir()
	w, err := watchUpper(ctx, upper, "/workspace")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := w.Created(); len(got) != 0 {
		t.Fatalf("nothing there at arming: %v", got)
	}
	if err := os.Mkdir(filepath.Join(upper, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the directory's watch is added when the root's event is read
	p := filepath.Join(upper, "workspace", "pwned")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Remove(p) // gone at once: still seen
	got := waitFor(w, 1)
	if len(got) == 0 || got[0].Path != "/workspace/pwned" || got[0].Present {
		t.Fatalf("created after arming: %+v", got)
	}

	upper2 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(upper2, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(upper2, "workspace", "data.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w2, err := watchUpper(ctx, upper2, "/workspace")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(upper2, "workspace", "data.csv"), filepath.Join(upper2, "workspace", "report.md")); err != nil {
		t.Fatal(err)
	}
	got = waitFor(w2, 2)
	if len(got) != 2 || got[0].Path != "/workspace/data.csv" || !got[0].Present || got[1].Path != "/workspace/report.md" || got[1].Present {
		t.Fatalf("present at arming, then moved in: %+v", got)
	}

	// The container removed: the watch ends, with no error.
	if err := os.RemoveAll(upper2); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w2.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end with its directory")
	}
	if _, err := w2.Created(); err != nil {
		t.Errorf("ended with its directory: %v", err)
	}
	cancel()
	select {
	case <-w.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not end with its context")
	}
	if _, err := watchUpper(context.Background(), upper, "/a/b"); err == nil {
		t.Error("a nested directory is refused")
	}
}
