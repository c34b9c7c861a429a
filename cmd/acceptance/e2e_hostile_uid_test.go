//go:build e2e

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/report"
)

// hostileReaches are the members whose attack a level below full does not
// stop, and why (docs/hostile.md, "Attack × level"). They are left out of
// that level's class: their attack would reach the classmates the test
// compares with their grades alone. At level uid there is none since
// hostile-saboteur's `kill -9 -1` through classmates' execd ports meets
// each execd's access token (the grader asks the bundled server for one
// per sandbox below level full): it is graded with the class, and its
// classmates' grades must be what they are alone.
var hostileReaches = map[string]map[string]string{
	"uid": {},
}

// hostileFailsAt are the entries a member must fail at a level where that
// differs from hostileSet's (level full).
var hostileFailsAt = map[string]map[string][]string{
	"uid": {
		// RLIMIT_FSIZE refuses its 1 TiB truncates, so contract.json stays
		// the honest one and M0 passes; summary.json → /etc/shadow is still
		// planted and dropped at copy-out: M2 fails.
		"hostile-sparse-symlink": {"M2"},
	},
}

// TestHostileCalibrationUID is TestHostileCalibration at level uid (each
// command a uid of its own with rlimits, no namespaces: what root gets in an
// unprivileged container): the attacks on classmates' keys and bundles, the
// grader's memory, its binary, and processes that outlive the grade all
// fail there too; every bundle says level uid.
func TestHostileCalibrationUID(t *testing.T) {
	if why := confine.AvailableUID(); why != "" {
		t.Skip("level uid is not available here: " + why)
	}
	hostileCalibration(t, string(confine.LevelUID))
}

// hostileLevel asserts the bundle's report names the level.
func hostileLevel(t *testing.T, bundle string, want confine.Level) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(bundle, report.JSONFile))
	require.NoError(t, err)
	var doc struct {
		Confinement *struct {
			Level confine.Level `json:"level"`
		} `json:"confinement"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	if assert.NotNil(t, doc.Confinement, "%s: no confinement in report.json", bundle) {
		assert.Equal(t, want, doc.Confinement.Level, "%s: the level report.json names", bundle)
	}
}

// hostileIn says whether the class set holds member dir.
func hostileIn(set []hostileCase, dir string) bool {
	for _, c := range set {
		if c.dir == dir {
			return true
		}
	}
	return false
}

// ownNetns runs cmd in a network namespace of its own with loopback up
// (unshare --net; the grader's pid stays cmd's: sh execs it).
func ownNetns(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	for _, bin := range []string{"unshare", "ip"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("not measured: the hostile grade at level uid runs in a network namespace of its own (its saboteur scans every loopback port), which needs %s: %v", bin, err)
		}
	}
	args := append([]string{"--net", "sh", "-c", `ip link set lo up && exec "$@"`, "sh"}, cmd.Args...)
	args[len(args)-len(cmd.Args)] = cmd.Path
	c := exec.Command("unshare", args...)
	c.Env, c.Dir = cmd.Env, cmd.Dir
	return c
}

// outsideAttack is hostile-saboteur's attack (its post_kill_all:
// `kill -9 -1` POSTed to /command, and its verdict on the answer) driven
// without pause: every loopback port listening in its network namespace
// (/proc/net/tcp, world-readable) is POSTed to as soon as it appears, once,
// until its stdin closes; then it prints its record.
const outsideAttack = `
import importlib.util, json, os, select, sys, time
spec = importlib.util.spec_from_file_location("hostile_attacks", os.environ["ATTACKS"])
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
def listening():
    ports = set()
    with open("/proc/net/tcp") as f:
        for line in f.read().splitlines()[1:]:
            c = line.split()
            if len(c) > 3 and c[3] == "0A" and c[1].startswith("0100007F:"):
                ports.add(int(c[1].split(":")[1], 16))
    return ports
tried, out = set(), {"ran": 0, "token": 0, "no": 0}
while not select.select([sys.stdin], [], [], 0)[0]:
    for p in sorted(listening() - tried):
        tried.add(p)
        out[h.post_kill_all(p, time.time() + 60) or "no"] += 1
    time.sleep(0.1)
print(json.dumps({"ports_tried": len(tried), "execd_hit": out["ran"], "execd_token_refused": out["token"], "other": out["no"]}))
`

// outsideSaboteur runs outsideAttack beside the grade whose grader is
// pid, for the whole grade: as uid 65534 (another uid than every box's and
// sandbox's), in the grade's network namespace. The function it returns
// stops it and returns its record.
func outsideSaboteur(t *testing.T, root string, pid int) func() map[string]any {
	t.Helper()
	for _, bin := range []string{"nsenter", "setpriv"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("the saboteur beside the grade needs %s: %v", bin, err)
		}
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	ns := fmt.Sprintf("/proc/%d/ns/net", pid)
	deadline := time.Now().Add(30 * time.Second)
	for { // the namespace exists once unshare made it (never attack this one)
		if cur, err := os.Readlink(ns); err == nil && cur != self {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the grade never entered a network namespace of its own")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Held open, the namespace outlives the grader: the attack never
	// follows a reused pid into another one.
	nsf, err := os.Open(ns)
	require.NoError(t, err)
	c := exec.Command("nsenter", "--net=/proc/self/fd/3", "setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
		"/usr/bin/python3", "-c", outsideAttack)
	c.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent",
		"ATTACKS=" + filepath.Join(root, "fixtures", "submissions", "hostile_attacks.py")}
	c.ExtraFiles = []*os.File{nsf}
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	stop, err := c.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, c.Start())
	return func() map[string]any {
		_ = stop.Close() // its stdin at EOF: the grade is over
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case err = <-done:
		case <-time.After(2 * time.Minute):
			_ = c.Process.Kill()
			err = <-done
		}
		_ = nsf.Close()
		var r map[string]any
		if err != nil || json.Unmarshal(out.Bytes(), &r) != nil {
			t.Errorf("the saboteur beside the grade: %v: %s %s", err, out.String(), errb.String())
		}
		return r
	}
}
