//go:build e2e

package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
)

// gradescopeLevel is the confinement level a Gradescope container gives the
// grader: root without extra privileges (Docker's default seccomp profile and
// capabilities) allows neither bubblewrap's namespaces nor the grader's
// network namespaces, only a uid of each command's own (docs/confinement.md).
const gradescopeLevel = "uid"

// gradescope is the autograder of `make gradescope-zip`, set up as Gradescope
// does on the project's engine: the zip unpacked in /autograder/source of a
// Debian container, setup.sh run there as root, the result kept as an image.
type gradescope struct {
	e      imageE2E
	image  string
	digest string // sha256 of the zip's bin/acceptance
}

var (
	gradescopeOnce sync.Mutex
	gradescopeImg  *gradescope
)

// setupGradescope builds the grader image (for its base), the autograder zip,
// and the autograder's image: setup.sh run as root in a container of the
// base (Debian with the packages setup.sh would install: the engine has no
// network, so its apt step finds them present), then committed. Once per
// test binary.
func setupGradescope(t *testing.T) *gradescope {
	t.Helper()
	gradescopeOnce.Lock()
	defer gradescopeOnce.Unlock()
	if gradescopeImg != nil {
		return gradescopeImg
	}
	e := requireImageEngine(t)
	e.graderImage(t)
	base := e.baseImage(t)
	zip := filepath.Join(e.root, e.script(t, 20*time.Minute, nil, "gradescope-zip.sh"))
	bin, err := os.ReadFile(filepath.Join(filepath.Dir(zip), "autograder", "bin", "acceptance"))
	require.NoError(t, err)
	sum := sha256.Sum256(bin)
	name := e.containerName(t, "gs-setup")
	start := time.Now()
	logs, _ := e.docker(t, 10*time.Minute, false, "run", "--name", name, "--network", "none",
		"-v", filepath.Dir(zip)+":/zip:ro", base, "bash", "-c",
		"set -e; mkdir -p /autograder/source /autograder/results /autograder/submission; cd /autograder/source; "+
			"unzip -q /zip/autograder.zip; bash setup.sh; cp run_autograder /autograder/run_autograder; chmod 0755 /autograder/run_autograder")
	t.Logf("Gradescope setup (setup.sh in %s): %s\n%s", base, time.Since(start).Round(time.Second), tail(logs, 2000))
	const ref = "osb-acceptance/gradescope-autograder:e2e"
	e.docker(t, 5*time.Minute, false, "commit", name, ref)
	gradescopeImg = &gradescope{e: e, image: ref, digest: hex.EncodeToString(sum[:])}
	return gradescopeImg
}

// gsResult is what one Gradescope grade left.
type gsResult struct {
	results  map[string]any // /autograder/results/results.json
	raw      []byte
	bundle   string   // the grader's bundle under /autograder/results/grade
	keys     string   // the journal keys the grade used
	after    []string // processes alive after run_autograder returned (ps: uid pid args), the probe's own excluded
	exeAfter string   // sha256 of /autograder/source/bin/acceptance after the grade
	shadow   string   // the container's /etc/shadow, first line
	log      string
}

// grade runs run_autograder as Gradescope does: a fresh container of the
// autograder image, root inside, Docker's default seccomp profile and
// capabilities (no --privileged, no added capability), the submission at
// /autograder/submission. No network (--network none): grading needs only
// loopback. After run_autograder returns, the same container lists the
// processes still alive and hashes the grader's binary.
func (g *gradescope) grade(t *testing.T, submission, flags, tags string) gsResult {
	t.Helper()
	res, keys, probe := keptDir(t, "gradescope-"+filepath.Base(submission)), t.TempDir(), t.TempDir()
	require.NoError(t, os.Chmod(keys, 0o700), "the journal key directory must be the grader's alone")
	name := g.e.containerName(t, "gs-grade")
	start := time.Now()
	logs, code := g.e.docker(t, 20*time.Minute, true, "run", "--name", name, "--network", "none",
		"-e", "GRADE_FLAGS="+flags, "-e", "GRADE_TAGS="+tags, "-e", "ACCEPTANCE_JOURNAL_KEYS=/keys",
		"-v", submission+":/autograder/submission", "-v", res+":/autograder/results", "-v", keys+":/keys", "-v", probe+":/probe",
		g.image, "bash", "-c",
		"/autograder/run_autograder >/probe/autograder.log 2>&1; "+
			"ps -eo uid=,pid=,ppid=,args= | awk -v me=$$ '$2 != me && $3 != me' >/probe/after.txt; "+
			"sha256sum /autograder/source/bin/acceptance | cut -d' ' -f1 >/probe/exe.txt; head -n1 /etc/shadow >/probe/shadow.txt")
	r := gsResult{keys: keys}
	lb, _ := os.ReadFile(filepath.Join(probe, "autograder.log"))
	r.log = string(lb)
	t.Logf("run_autograder %s (GRADE_FLAGS=%q GRADE_TAGS=%q): container exit %d in %s\n%s%s", filepath.Base(submission), flags, tags, code,
		time.Since(start).Round(time.Second), tail(logs, 1000), tail(r.log, 3000))
	require.Equal(t, 0, code, "the container ran run_autograder and the probe")
	var err error
	r.raw, err = os.ReadFile(filepath.Join(res, "results.json"))
	require.NoError(t, err, "run_autograder leaves /autograder/results/results.json")
	require.NoError(t, json.Unmarshal(r.raw, &r.results))
	if m, _ := filepath.Glob(filepath.Join(res, "grade", "*", "report.json")); len(m) == 1 {
		r.bundle = filepath.Dir(m[0])
	}
	ab, _ := os.ReadFile(filepath.Join(probe, "after.txt"))
	for _, l := range strings.Split(strings.TrimSpace(string(ab)), "\n") {
		if f := strings.Fields(l); len(f) >= 4 && !(f[3] == "bash" || strings.HasPrefix(f[3], "ps") || strings.HasPrefix(f[3], "awk")) {
			r.after = append(r.after, l)
		}
	}
	eb, _ := os.ReadFile(filepath.Join(probe, "exe.txt"))
	r.exeAfter = strings.TrimSpace(string(eb))
	sb, _ := os.ReadFile(filepath.Join(probe, "shadow.txt"))
	r.shadow = strings.TrimSpace(string(sb))
	return r
}

// check validates results.json against Gradescope's schema and checks the
// level it names, in extra_data and in the output students read.
func (r gsResult) check(t *testing.T, e imageE2E) {
	t.Helper()
	f, err := os.Open(filepath.Join(e.root, "harness", "report", "render", "gradescope.schema.json"))
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("gradescope.schema.json", doc))
	s, err := c.Compile("gradescope.schema.json")
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.raw))
	require.NoError(t, err)
	require.NoError(t, s.Validate(inst), "results.json must follow Gradescope's spec:\n%s", tail(string(r.raw), 3000))
	require.NotEmpty(t, r.bundle, "the grader wrote its bundle (results.json is the grader's, not run_autograder's fallback):\n%s", tail(r.log, 3000))
	extra, _ := r.results["extra_data"].(map[string]any)
	assert.Equal(t, gradescopeLevel, extra["confinement_level"], "results.json extra_data.confinement_level")
	out, _ := r.results["output"].(string)
	assert.Contains(t, out, "Confinement: level "+gradescopeLevel, "results.json's output names the level")
	level, conf := reportConfinement(t, r.bundle)
	assert.Equal(t, gradescopeLevel, level, "report.json confinement %v", conf)
}

// gsSubmission makes a self-contained copy of a calibration member, as a
// student uploads it: the member's files, and the shared code it names with
// ../ (../student, ../hostile_attacks.py) copied in and named with ./.
func gsSubmission(t *testing.T, root, member string) string {
	t.Helper()
	subs := filepath.Join(root, "fixtures", "submissions")
	dst := filepath.Join(t.TempDir(), member)
	require.NoError(t, os.CopyFS(dst, os.DirFS(filepath.Join(subs, member))))
	y, err := os.ReadFile(filepath.Join(dst, "capstone.yaml"))
	require.NoError(t, err)
	if bytes.Contains(y, []byte("../student/")) {
		require.NoError(t, os.CopyFS(filepath.Join(dst, "student"), os.DirFS(filepath.Join(subs, "student"))))
	}
	if bytes.Contains(y, []byte("../hostile_attacks.py")) {
		b, err := os.ReadFile(filepath.Join(subs, "hostile_attacks.py"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dst, "hostile_attacks.py"), b, 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dst, "capstone.yaml"), bytes.ReplaceAll(y, []byte("../"), []byte("./")), 0o644))
	return dst
}

// TestGradescopeAutograder: `make gradescope-zip`'s setup.sh and
// run_autograder, run as Gradescope runs them (setupGradescope, grade), grade
// the student on M0: results.json validates against Gradescope's schema,
// names the level the container allows (uid), and M0 passes there.
func TestGradescopeAutograder(t *testing.T) {
	g := setupGradescope(t)
	r := g.grade(t, gsSubmission(t, g.e.root, "student"), "--seed 1", "@milestone:M0")
	r.check(t, g.e)
	tests, _ := r.results["tests"].([]any)
	var m0, why string
	for _, x := range tests {
		tm, _ := x.(map[string]any)
		if n, _ := tm["name"].(string); strings.HasPrefix(n, "M0:") {
			m0, _ = tm["status"].(string)
			why, _ = tm["output"].(string)
		}
	}
	assert.Equal(t, "passed", m0, "the student's M0 at the %s level: %s", gradescopeLevel, tail(why, 2000))
	assert.Empty(t, r.after, "no process outlives run_autograder")
}

// gsHostileCase is one round-1 hostile member graded in a Gradescope
// container: the scenarios its attack rides on, and whether the attack was
// stopped (with what was seen), judged from its record and the grade.
type gsHostileCase struct {
	member, attack string
	tags           []string
	stopped        func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string)
}

var gsHostileSet = []gsHostileCase{
	{member: "hostile-spy", attack: "spy", tags: []string{"@milestone:M2"}, stopped: func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string) {
		for _, x := range recs {
			if n, _ := x["sibling_keys"].(float64); n > 0 || len(asList(x["sibling_files"])) > 0 {
				return false, "read keys or files of other processes: " + compact(x)
			}
		}
		return true, "no key and no file of the grader read"
	}},
	{member: "hostile-forger", attack: "forger", tags: []string{"@milestone:M0"}, stopped: func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string) {
		if err := report.VerifyJournal(r.bundle, r.keys); err != nil {
			return false, "the journal does not verify: " + err.Error()
		}
		fresh := renderCopy(t, r.bundle, r.keys)
		cur := calibrationBundle(t, filepath.Dir(r.bundle), 0, strings.TrimPrefix(filepath.Base(r.bundle), "01-"))
		if cur == nil || fresh.Score.Earned != cur.Score.Earned || fresh.Verdict != cur.Verdict {
			return false, "report.json differs from its verified journal"
		}
		if s, _ := r.results["score"].(float64); s != cur.Score.Earned {
			return false, "results.json's score differs from the bundle's"
		}
		return true, "journal verified, report.json and results.json as the journal says"
	}},
	{member: "hostile-canary-wiper", attack: "canary-wiper", tags: []string{"@milestone:M3"}, stopped: func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string) {
		for _, x := range recs {
			if x["token_found"] == true && x["wipe_status"] == float64(204) {
				return false, "the admin API accepted the empty canary set: " + compact(x)
			}
		}
		if !entryFailed(t, r.bundle, "M3") {
			return false, "the token in the sandbox's environment was not caught (M3 did not fail)"
		}
		return true, "canaries kept, the planted token caught (M3 failed)"
	}},
	{member: "hostile-grader-killer", attack: "grader-killer", tags: []string{"@drill:D5"}, stopped: func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string) {
		for _, x := range recs {
			if x["grader_killed"] != nil {
				return false, "killed the grader: " + compact(x)
			}
		}
		return r.bundle != "", "the grader lived to write its bundle"
	}},
	{member: "hostile-saboteur", attack: "saboteur", tags: []string{"@milestone:M2"}, stopped: func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string) {
		for _, x := range recs {
			if n, _ := x["execd_hit"].(float64); n > 0 {
				return false, "ran commands through execd ports not its own: " + compact(x)
			}
		}
		return true, "no execd port but its own answered"
	}},
	{member: "hostile-trojan", attack: "trojan", tags: []string{"@milestone:M0"}, stopped: func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string) {
		if r.exeAfter != g.digest {
			return false, "/autograder/source/bin/acceptance changed"
		}
		for _, x := range recs {
			if x["replaced"] == true {
				return false, "the record says replaced: " + compact(x)
			}
		}
		return true, "the grader's binary unchanged"
	}},
	{member: "hostile-fanout-fill", attack: "fanout-fill", tags: []string{"@drill:D5"}, stopped: func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string) {
		for _, x := range recs {
			if x["bounded_because_unconfined"] == true {
				return false, "withheld: it ran unconfined as root"
			}
			if n, _ := x["bytes_written"].(float64); n >= float64(8<<30) {
				return false, "wrote 8 GiB unhindered: " + compact(x)
			}
		}
		if len(r.after) > 0 {
			return false, "processes outlived the grade: " + strings.Join(r.after, "; ")
		}
		return true, "the fill was bounded and no child outlived the grade"
	}},
	{member: "hostile-sparse-symlink", attack: "sparse-symlink", tags: []string{"@milestone:M0"}, stopped: func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string) {
		bad := ""
		_ = filepath.WalkDir(filepath.Dir(filepath.Dir(r.bundle)), func(p string, d fs.DirEntry, err error) error {
			if err != nil || bad != "" {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				bad = "a symbolic link in the results: " + p
			} else if info, err := d.Info(); err == nil && d.Type().IsRegular() && info.Size() < 64<<20 && len(r.shadow) > 8 {
				if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(r.shadow)) {
					bad = "/etc/shadow's first line in " + p
				}
			}
			return nil
		})
		return bad == "", firstNonEmpty(bad, "no link kept, /etc/shadow nowhere in the results")
	}},
	{member: "hostile-never-exits", attack: "", tags: []string{"@drill:D5"}, stopped: func(t *testing.T, g *gradescope, r gsResult, recs []map[string]any) (bool, string) {
		if len(r.after) > 0 {
			return false, "processes outlived the grade: " + strings.Join(r.after, "; ")
		}
		return true, "its never-ending reap ended with the grade"
	}},
}

// TestGradescopeHostile: the round-1 hostile members, each graded alone in
// its own Gradescope container (as Gradescope grades), on the scenarios its
// attack rides on, each command limited to 2 minutes (the never-ending reap
// would otherwise hold the test for the default 10). Each gets the outcome docs/grading.md documents for the
// uid level in a Gradescope container (its table of the round-1 members):
// stopped, or not stopped.
func TestGradescopeHostile(t *testing.T) {
	g := setupGradescope(t)
	documented := documentedOutcomes(t, filepath.Join(g.e.root, "docs", "grading.md"), gradescopeLevel)
	for _, c := range gsHostileSet {
		t.Run(c.member, func(t *testing.T) {
			r := g.grade(t, gsSubmission(t, g.e.root, c.member), "--seed 1 --subject-timeout 2m", tagsExcept(c.tags, "@large", "@agent"))
			r.check(t, g.e)
			var recs []map[string]any
			if c.attack != "" {
				recs = append(attackRecords(r.bundle), stderrAttackRecords(r.bundle, c.attack)...)
				require.NotEmpty(t, recs, "the %s attack ran and left its record", c.attack)
			}
			stopped, why := c.stopped(t, g, r, recs)
			want, ok := documented[c.member]
			if !assert.True(t, ok, "docs/grading.md documents no outcome at the %s level for %s", gradescopeLevel, c.member) {
				t.Logf("measured: stopped=%v (%s)", stopped, why)
				return
			}
			assert.Equal(t, want, stopped, "%s at the %s level: documented stopped=%v, measured %s", c.member, gradescopeLevel, want, why)
		})
	}
}

// stderrAttackRecords are the records an attack printed to its command's
// stderr ("hostile NAME: {…}"), which the bundle keeps: the grader-killer's
// kill -9 -1 at level uid ends its own writer, and its attack-*.json is then
// left empty, but the line it printed before is in stderr.log.
func stderrAttackRecords(bundle, attack string) []map[string]any {
	var out []map[string]any
	logs, _ := filepath.Glob(filepath.Join(bundle, "evidence", "*", "stderr.log"))
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) > 8<<20 {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			rest, ok := strings.CutPrefix(l, "hostile "+attack+": ")
			var m map[string]any
			if ok && json.Unmarshal([]byte(rest), &m) == nil {
				out = append(out, m)
			}
		}
	}
	return out
}

func entryFailed(t *testing.T, bundle, id string) bool {
	r := calibrationBundle(t, filepath.Dir(bundle), 0, strings.TrimPrefix(filepath.Base(bundle), "01-"))
	if r == nil {
		return false
	}
	for _, list := range [][]entryJSON{r.Criteria, r.Milestones, r.Drills} {
		for _, en := range list {
			if en.ID == id {
				return en.Verdict == "failed"
			}
		}
	}
	return false
}

func asList(v any) []any { l, _ := v.([]any); return l }

func compact(m map[string]any) string {
	b, _ := json.Marshal(m)
	return tail(string(b), 400)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
