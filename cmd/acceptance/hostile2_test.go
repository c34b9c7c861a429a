package main

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// hostile2Set is the second round: each the student plus ONE attack of
// issue 26's "Why" (the attacks: fixtures/submissions/hostile2_attacks.py).
var hostile2Set = []hostileCase{
	// Thousands of idle connections to the lifecycle port and the CSV stub:
	// the per-box cap and the servers' timeouts bound them; it costs the
	// attacker only (the honest members' checks above).
	{dir: "hostile2-fd-flood", attack: "fd-flood", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			assert.Positive(t, h2Num(r["targets"]), "the flood found no loopback target")
		}
	}},
	// A sandbox without resourceLimits, loaded and left behind, and 70 more
	// (the bundled server's quota is 64 live sandboxes a tenant).
	{dir: "hostile2-runaway", attack: "runaway", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			assert.Less(t, h2Num(r["extra_accepted"]), 70.0, "70 more sandboxes were accepted: no per-submission quota")
			if in, ok := r["inside"].([]any); ok && len(in) > 1 {
				assert.NotEqual(t, "max", in[1], "a sandbox created without resourceLimits got no pids limit")
			}
		}
	}},
	// Its contract command ignores SIGTERM past --subject-timeout: M0 fails
	// for it (the grader kills it); nobody else waits on it.
	{dir: "hostile2-stall", attack: "stall", fail: []string{"M0"}},
	// The pvc volume: a disk quota, nosuid; removed at the end (checked
	// above, with the setuid file).
	{dir: "hostile2-volume", attack: "volume", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			if v, err := strconv.Atoi(fmt.Sprint(r["fill_mib"])); err == nil {
				assert.Less(t, v, 1300, "1,300 MiB written to a named volume: no disk quota")
			}
			if fmt.Sprint(r["mounted"]) != "0" && r["mounted"] != nil {
				assert.Equal(t, fmt.Sprint(r["mounted"]), fmt.Sprint(r["nosuid_mounts"]), "the named volume is mounted without nosuid")
			}
		}
	}},
	// The keyless server proxy into others' sandboxes: the guard refuses it.
	{dir: "hostile2-keyless", attack: "keyless-proxy", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			assert.EqualValues(t, 0, r["commands_ran"], "the keyless proxy ran commands in other submissions' sandboxes: %v", r["ran_in"])
			if h2Num(r["ids_tried"]) == 0 {
				t.Logf("the guard's refusal was not exercised: the attack learned no other sandbox's id (sources %v)", r["sources"])
			}
		}
	}},
	// 100,000 empty directories and 3,000 files: the copy-out counts every
	// entry and bounds its dropped list.
	{dir: "hostile2-dirbomb", attack: "", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		dirs, biggest := 0, int64(0)
		_ = filepath.WalkDir(b.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				dirs++
			} else if info, err := d.Info(); err == nil && (d.Name() == "run.json" || d.Name() == "invocation.json" || strings.HasSuffix(d.Name(), "dropped.json")) && info.Size() > biggest {
				biggest = info.Size()
			}
			return nil
		})
		assert.Less(t, dirs, 2000, "the copy-out re-made the submission's empty directories in the bundle")
		assert.Less(t, biggest, int64(256<<10), "a command record (its dropped list) is unbounded")
	}},
	// Console, progress.log and Markdown injection: its tests fail and its
	// run reports an error; what must hold is checked for the whole class
	// above ("everything the submissions wrote is inert").
	{dir: "hostile2-injection", attack: "", fail: []string{"maintainability"}},
	// Unknown manifest keys holding ESC/OSC bytes and forged lines: checked
	// with the console and every file.
	{dir: "hostile2-yaml-keys"},
}

// hostile2MayBeRefused are members whose manifest the grader may refuse
// outright (not graded: no bundle); the others must have a report.
var hostile2MayBeRefused = map[string]bool{"hostile2-yaml-keys": true}

func h2Num(v any) float64 {
	f, _ := v.(float64)
	return f
}
