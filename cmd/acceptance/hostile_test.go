package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/classreport"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// hostileCase is one hostile submission: the honest one it is built on, the
// entries its base must fail anyway, and what its attack must not achieve.
type hostileCase struct {
	dir    string
	attack string   // the attack-<name>.json record its attack writes
	fail   []string // entries that must fail (its base's defect, or what the attack breaks of itself)
	check  func(t *testing.T, h *hostileRun, b *hostileBundle)
}

// hostileSet is the authority for fixtures/submissions/README.md's hostile table.
var hostileSet = []hostileCase{
	{dir: "hostile-spy", attack: "spy", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			assert.EqualValues(t, 0, r["sibling_keys"], "the spy read classmates' API keys from /proc/*/environ")
			assert.Empty(t, r["sibling_files"], "the spy read classmates' bundles")
		}
	}},
	{dir: "hostile-forger", attack: "forger", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		// What the bundle says is what its own journal, verified, says.
		require.NoError(t, report.VerifyJournal(b.dir, h.keys), "the forger's journal must be its own run's, unaltered")
		fresh := renderCopy(t, b.dir, h.keys)
		assert.Equal(t, fresh.Score.Earned, b.report.Score.Earned, "report.json's score was rewritten after the grader wrote it")
		assert.Equal(t, fresh.Verdict, b.report.Verdict, "report.json's verdict was rewritten after the grader wrote it")
	}},
	// bad-token-in-env plus a wipe of the canaries: the token must still be found.
	{dir: "hostile-canary-wiper", attack: "canary-wiper", fail: []string{"M3", "credential"}, check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			if r["token_found"] == true {
				assert.NotEqualValues(t, 204, r["wipe_status"], "the admin API accepted the empty canary set")
			}
		}
	}},
	{dir: "hostile-grader-killer", attack: "grader-killer", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			assert.Nil(t, r["grader_killed"], "the submission killed the grader (pid %v)", r["grader_killed"])
			if r["kill_all"] != "sent" {
				t.Logf("kill -9 -1 was not sent: %v", r["kill_all"])
			}
		}
	}},
	{dir: "hostile-saboteur", attack: "saboteur", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		refused := 0.0
		for _, r := range b.attacks {
			assert.EqualValues(t, 0, r["execd_hit"], "the saboteur ran commands through other sandboxes' execd ports")
			n, _ := r["execd_token_refused"].(float64)
			refused += n
		}
		// Below level full its scan reaches every loopback port, classmates'
		// execd ports among them: each execd's access token refuses it
		// (401). Whether a classmate's sandbox was live while it posted
		// depends on the schedule, so a count of 0 is logged, not failed.
		if h.level != "" && h.level != string(confine.LevelFull) {
			t.Logf("level %s: %v execd ports refused the saboteur for want of their access token (401)", h.level, refused)
		}
		// Its scan is its own: a command that scanned (confine.ScanPorts)
		// has no port look-up among the grader's breaks, so its failures
		// are judged, not harness errors (docs/hostile.md, 2026-12-02).
		for _, c := range scanningCommands(b.dir) {
			t.Logf("%s: %d refused, %d of the grader's breaks", c.path, c.refused, c.broken)
			assert.Empty(t, c.lookUpBreaks, "%s scanned, and its doubts were recorded as the grader's breaks", c.path)
		}
	}},
	{dir: "hostile-trojan", attack: "trojan", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		assert.Equal(t, h.exeDigest, digestFile(t, h.exe), "the {acceptance} binary was replaced")
		_, err := os.Stat(filepath.Join(filepath.Dir(h.exe), "hostile-trojan-ran"))
		assert.True(t, errors.Is(err, fs.ErrNotExist), "the trojan's code ran in another submission's command")
	}},
	{dir: "hostile-fanout-fill", attack: "fanout-fill", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			if r["bounded_because_unconfined"] == true {
				t.Skipf("not measured: the fan-out and the disk filler were withheld (bounded to 64 children and 64 MiB): the command ran unconfined as root in the host's PID namespace")
			}
			assert.Less(t, r["bytes_written"], float64(8<<30), "the disk filler wrote 8 GiB unhindered: no disk quota")
		}
	}},
	// 1 TiB sparse report.md and contract.json, summary.json → /etc/shadow:
	// every entry that reads them fails, with the cap or link as its reason.
	{dir: "hostile-sparse-symlink", attack: "sparse-symlink", fail: []string{"M0", "M2"}, check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		shadow, _ := os.ReadFile("/etc/shadow")
		first, _, _ := bytes.Cut(shadow, []byte("\n"))
		_ = filepath.WalkDir(b.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				t.Errorf("the bundle keeps a symbolic link: %s", rel(b.dir, p))
			}
			if d.Type().IsRegular() && len(first) > 8 {
				if info, err := d.Info(); err == nil && info.Size() < 64<<20 {
					if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, first) {
						t.Errorf("%s holds /etc/shadow's first line", rel(b.dir, p))
					}
				}
			}
			return nil
		})
	}},
	// Its reap never exits: D5 cannot pass; the timeout ends it.
	{dir: "hostile-never-exits", attack: "", fail: []string{"D5"}},
}

// hostileTags are the scenarios the hostile grade runs: every kind of command
// an attack rides on (run: M2's main run, M3; contract: M0; reap: D5) without
// the rest of the course, which no attack needs (the grade stays a few
// minutes per submission). M2 is its main run only (@criterion:function, as
// hostile2Tags): its eight awkward- and broken-input runs are more of the
// same command, each attack already rides on the main run, and they cost
// about 40 s of CPU per submission, 200 runs over the two hostile rounds
// (CI took 57 min on 2 cores, this theme 38 of them, on 2026-12-02).
// (tagsExcept: godog reads "," before "&&", so every alternative carries the
// exclusions.)
var hostileTags = tagsExcept([]string{"@milestone:M0", "@milestone:M2 && @criterion:function", "@milestone:M3", "@drill:D5"}, "@large", "@agent")

type hostileRun struct {
	out, keys, exe, exeDigest string
	level                     string // --confinement ("" the machine's own)
}

type hostileBundle struct {
	dir     string
	report  *calibReport
	attacks []map[string]any
}

// scannedCommand is a command record of a bundle whose box refused more
// than confine.ScanPorts connections.
type scannedCommand struct {
	path            string
	refused, broken int
	lookUpBreaks    []string // its breaks that are a port look-up's doubt
}

// scanningCommands are the command records (run.json, invocation.json) of a
// bundle's evidence whose box refused more than confine.ScanPorts
// connections.
func scanningCommands(dir string) []scannedCommand {
	var out []scannedCommand
	_ = filepath.WalkDir(filepath.Join(dir, report.EvidenceDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || (d.Name() != "run.json" && d.Name() != "invocation.json") {
			return nil
		}
		b, err := os.ReadFile(p)
		var rec struct {
			Result *struct {
				Confinement *confine.Status `json:"confinement"`
			} `json:"result"`
		}
		if err != nil || len(b) > 4<<20 || json.Unmarshal(b, &rec) != nil || rec.Result == nil || rec.Result.Confinement == nil {
			return nil
		}
		st := rec.Result.Confinement
		if st.RefusedCount <= confine.ScanPorts {
			return nil
		}
		c := scannedCommand{path: p, refused: st.RefusedCount, broken: st.BrokenCount}
		for _, x := range st.Broken {
			if strings.Contains(x.Reason, "whether the port is this submission's") {
				c.lookUpBreaks = append(c.lookUpBreaks, x.Addr+" "+x.Reason)
			}
		}
		out = append(out, c)
		return nil
	})
	return out
}

// attackRecords reads every attack-<name>.json a submission left in its bundle.
func attackRecords(dir string) []map[string]any {
	var out []map[string]any
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), "attack-") || !strings.HasSuffix(d.Name(), ".json") {
			return nil
		}
		b, err := os.ReadFile(p)
		var m map[string]any
		if err == nil && len(b) < 1<<20 && json.Unmarshal(b, &m) == nil {
			out = append(out, m)
		}
		return nil
	})
	return out
}

// renderCopy renders a copy of a bundle from its verified journal: what its
// report.json must say.
func renderCopy(t *testing.T, dir, keys string) *calibReport {
	t.Helper()
	cp := filepath.Join(t.TempDir(), filepath.Base(dir))
	require.NoError(t, os.MkdirAll(cp, 0o755))
	for _, f := range []string{report.MetaFile, report.JournalFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(cp, f), b, 0o644))
	}
	doc, err := report.RenderDir(cp, rubric.Course, report.Options{JournalKeys: keys})
	require.NoError(t, err)
	var r calibReport
	r.Verdict = string(doc.Verdict)
	r.Score.Earned, r.Score.Measured = doc.Score.Earned, doc.Score.Measured
	return &r
}

func classRows(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(out, classreport.ClassCSVFile))
	require.NoError(t, err, "the class summary")
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	rows := map[string]map[string]string{}
	for _, r := range recs[1:] {
		m := map[string]string{}
		for i, h := range recs[0] {
			if i < len(r) {
				m[h] = r[i]
			}
		}
		rows[filepath.Base(m["bundle"])] = m
	}
	return rows
}

// leftovers are the processes of THIS grade still alive, for both hostile
// rounds: a process in one of its boxes' cgroups (acc-<grader pid>-…, every
// process of a confined command, escaped or not), or one whose command line
// or environment names the grade's own directories (out, state): an
// unconfined command runs with HOME in a fresh directory under its bundle,
// which what it starts keeps (a "sleep" it execs), and every attack script
// is given its {out} (the forger's "setsid env -i" daemon too). Never
// matched by an attack script's name or the checkout's fixtures/ path: another
// grade on the machine (the other hostile round, the calibration theme, a
// developer's run) runs the same scripts, and its processes are not this
// test's to judge or kill.
func leftovers(graderPid int, dirs ...string) []string {
	var left []string
	self := strconv.Itoa(os.Getpid())
	box := fmt.Sprintf("/acc-%d-", graderPid)
	names := func(b []byte) bool {
		for _, d := range dirs {
			if d != "" && bytes.Contains(b, []byte(d)) {
				return true
			}
		}
		return false
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self || e.Name() == strconv.Itoa(graderPid) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		cg, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		mine := graderPid > 0 && (strings.Contains(string(cg), box) || strings.Contains(cmd, box))
		if mine || names(b) || names(env) {
			left = append(left, e.Name()+": "+tail(cmd, 160))
		}
	}
	return left
}

// killLeftovers ends what this grade's submissions left running (by pid), so
// a failed assertion never leaves them on the machine.
func killLeftovers(t *testing.T, graderPid int, dirs ...string) {
	for _, l := range leftovers(graderPid, dirs...) {
		pid, err := strconv.Atoi(strings.SplitN(l, ":", 2)[0])
		if err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Logf("killed leftover %s", l)
		}
	}
}

// restoreTrojaned puts the acceptance binary back if the trojan replaced it.
func restoreTrojaned(t *testing.T, exe string) {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return
	}
	if _, err := os.Stat(real + ".orig-hostile"); err == nil {
		_ = os.Rename(real+".orig-hostile", real)
		t.Logf("restored %s, which the trojan had replaced", real)
	}
	_ = os.Remove(filepath.Join(filepath.Dir(real), "hostile-trojan-ran"))
}

func digestFile(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// digestTree maps every path under dir to its mode and content hash
// (symbolic links by their target), skipping __pycache__.
func digestTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "__pycache__" {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h := sha256.New()
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			io.WriteString(h, "link:"+l)
		case d.Type().IsRegular():
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(h, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		out[rel(dir, p)] = info.Mode().String() + " " + hex.EncodeToString(h.Sum(nil))
		return nil
	}))
	return out
}

// treeChanges names what differs between two digestTree maps.
func treeChanges(before, after map[string]string) []string {
	var d []string
	for p, v := range after {
		if w, ok := before[p]; !ok {
			d = append(d, "added "+p)
		} else if w != v {
			d = append(d, "changed "+p)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			d = append(d, "removed "+p)
		}
	}
	sort.Strings(d)
	return d
}

func rel(base, p string) string {
	r, err := filepath.Rel(base, p)
	if err != nil {
		return p
	}
	return r
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// The leftover check of both hostile rounds takes only this grade's
// processes: one whose environment (an unconfined command's HOME) or command
// line names the grade's directories; never another grade's process running
// the same attack script.
func TestLeftoversAreThisGradesOnly(t *testing.T) {
	dir := t.TempDir()
	start := func(env []string, args ...string) int {
		c := exec.Command(args[0], args[1:]...)
		c.Env = env
		require.NoError(t, c.Start())
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
		return c.Process.Pid
	}
	byEnv := start([]string{"HOME=" + filepath.Join(dir, "home-1")}, "sleep", "300")
	byCmd := start(nil, "sh", "-c", "sleep 300; : --out "+filepath.Join(dir, "evidence"))
	other := start([]string{"HOME=/tmp/another-grade"}, "sh", "-c", "sleep 300; : python3 ../hostile_attacks.py forger --out /tmp/another-grade/out")
	got := map[int]bool{}
	for _, l := range leftovers(0, dir, "") {
		pid, err := strconv.Atoi(strings.SplitN(l, ":", 2)[0])
		require.NoError(t, err)
		got[pid] = true
	}
	assert.True(t, got[byEnv], "a process whose HOME is under the grade's directory")
	assert.True(t, got[byCmd], "a process whose command line names the grade's directory")
	assert.False(t, got[other], "another grade's attack script")
}
