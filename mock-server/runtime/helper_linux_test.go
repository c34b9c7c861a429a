//go:build linux

package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

const helperEnv = "OSB_RUNTIME_TEST_HELPER_STATE"

// helperInsecureEnv makes the helper's runtime insecure (uid sandboxes as root).
const helperInsecureEnv = "OSB_RUNTIME_TEST_HELPER_INSECURE"

// runHelper plays a server that creates one sandbox and then gets SIGKILLed.
func runHelper() int {
	insecure := os.Getenv(helperInsecureEnv) != ""
	rt, err := runtime.NewLinux(runtime.Options{StateDir: os.Getenv(helperEnv), ForceInsecure: insecure, AllowInsecureNoIsolation: insecure})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	prof, _ := runtime.ProfileFor("debian")
	id := uuid.NewString()
	sb, err := rt.Create(context.Background(), runtime.Spec{ID: id, Profile: prof, Entrypoint: []string{"sleep", "600"},
		Limits: runtime.Limits{MemoryBytes: 128 << 20, Pids: 64}})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	var pids []string
	for _, p := range sb.Pids() {
		pids = append(pids, strconv.Itoa(p))
	}
	fmt.Printf("READY %s %s %s\n", id, sb.Dir(), strings.Join(pids, ","))
	select {}
}

// helperServer is a helper process playing a server with one sandbox,
// started by startHelper.
type helperServer struct {
	cmd     *exec.Cmd
	id, dir string // the sandbox's
	pids    []int  // the sandbox's processes
	killed  bool
}

// startHelper starts a helper server on state (insecure: its sandbox runs
// as a uid of its own) and waits for its sandbox; it is SIGKILLed when t
// ends, if the test has not done it (kill).
func startHelper(t *testing.T, state string, insecure bool) *helperServer {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+state)
	if insecure {
		cmd.Env = append(cmd.Env, helperInsecureEnv+"=1")
	}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &helperServer{cmd: cmd}
	t.Cleanup(h.kill)
	line, _ := bufio.NewReader(out).ReadString('\n')
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "READY" {
		t.Fatalf("helper: %q", line)
	}
	h.id, h.dir = f[1], f[2]
	for _, s := range strings.Split(f[3], ",") {
		p, _ := strconv.Atoi(s)
		h.pids = append(h.pids, p)
	}
	return h
}

// kill SIGKILLs the helper, as a crash would, and waits for it.
func (h *helperServer) kill() {
	if h.killed {
		return
	}
	h.killed = true
	_ = h.cmd.Process.Signal(syscall.SIGKILL)
	_ = h.cmd.Wait()
}

func TestReapAfterServerSIGKILL(t *testing.T) {
	newRuntime(t) // skip reasons
	state := t.TempDir()
	h := startHelper(t, state, false)
	id, dir, pids := h.id, h.dir, h.pids
	h.kill()
	// The sandbox's processes die with the server (Pdeathsig, --die-with-parent)...
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && strings.Contains(strings.Join(leftovers(id, dir, pids), " "), "process") {
		time.Sleep(20 * time.Millisecond)
	}
	before := leftovers(id, dir, pids)
	if strings.Contains(strings.Join(before, " "), "process") {
		t.Errorf("sandbox processes survived the server's SIGKILL: %v", before)
	}
	// ...but the namespace, cgroups and directory stay until a new server reaps them.
	if len(before) < 3 {
		t.Fatalf("probe broken: expected netns, cgroups and dir left, got %v", before)
	}
	rt, err := runtime.NewLinux(runtime.Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	removed, err := rt.Reap()
	if err != nil {
		t.Fatalf("Reap: %v (%v)", err, removed)
	}
	if left := leftovers(id, dir, pids); len(left) > 0 {
		t.Fatalf("left after Reap: %v (removed %v)", left, removed)
	}
	t.Logf("left by the killed server: %v; Reap removed %d items", before, len(removed))
}
