package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/fixtures/submissions"
	"github.com/osb-capstone/acceptance/harness/stubs"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// calibrationCase is one submission and the entries it must fail.
type calibrationCase struct {
	dir  string
	fail []string // exactly these entries fail (criteria, milestones, drills); none for a good one
	// pending: expected failures the grader does not measure yet, with why.
	pending map[string]string
	// zero: the submission must earn 0 points (the empty one).
	zero bool
	// noise: while it is graded, a local process outside its box (the test:
	// noisyNeighbour) sends the sink, the index and the data API requests
	// nothing attributes; they must fail nothing and be in its evidence.
	noise bool
	// agentScenarios: a known-bad agent graded on the agent scenarios alone
	// (TestAgentCalibration); TestCalibration's whole-suite grade leaves it
	// out (flag agent-scenarios, fixtures/submissions/calibration.go).
	agentScenarios bool
}

// calibrationSet is the calibration set as its members' capstone.yaml
// headers declare it (fixtures/submissions: "# fails:", "# flags:"; the
// README's table is generated from the same headers): the good members first,
// then each known-bad one with exactly the entries it must fail.
// determinismOnlySet are the honest members that TestDeterminism
// (e2e_determinism_determinism_test.go) grades and TestCalibration does not
// (flag determinism-only): they fail nothing, and plant no defect for the
// calibration to catch.
//
// The headers are read when the test binary starts, from the source tree's
// fixtures (found from this file's place, whatever the working directory: the
// binary also runs as the bundled server's sandbox agent, elsewhere). An
// error is kept, never a panic, and fails the tests that need the set.
var calibrationSet, determinismOnlySet, calibrationSetErr = loadCalibrationSet()

func loadCalibrationSet() (set []calibrationCase, determinismOnly []string, err error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil, nil, fmt.Errorf("the calibration set: cannot tell where the source tree is")
	}
	members, err := submissions.Load(filepath.Join(filepath.Dir(file), "..", "..", "fixtures", "submissions"))
	if err != nil {
		return nil, nil, fmt.Errorf("the calibration set's capstone.yaml headers: %w", err)
	}
	for _, m := range members {
		if m.DeterminismOnly {
			determinismOnly = append(determinismOnly, m.Dir)
			continue
		}
		set = append(set, calibrationCase{dir: m.Dir, fail: m.Fails, pending: m.Pending, zero: m.ZeroPoints, noise: m.Noise,
			agentScenarios: m.AgentScenarios})
	}
	return set, determinismOnly, nil
}

// calibReport is the part of report.json the calibration reads.
type calibReport struct {
	reportJSON
	Score struct {
		Earned   float64 `json:"earned"`
		Measured float64 `json:"measured"`
	} `json:"score"`
}

// calibrationBundle finds the i-th submission's bundle (NN-name) and reads its report.json.
func calibrationBundle(t *testing.T, out string, i int, name string) *calibReport {
	t.Helper()
	p := filepath.Join(out, twoDigits(i+1)+"-"+name, "report.json")
	b, err := os.ReadFile(p)
	if err != nil {
		m, _ := filepath.Glob(filepath.Join(out, "*", "report.json"))
		t.Errorf("%s: no report.json at %s (%v); bundles: %v", name, p, err, m)
		return nil
	}
	var r calibReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Errorf("%s: report.json does not parse: %v", p, err)
		return nil
	}
	return &r
}

func twoDigits(n int) string { return string([]byte{byte('0' + n/10%10), byte('0' + n%10)}) }

func (c calibrationCase) check(t *testing.T, r *calibReport) {
	if r == nil {
		t.Fatal("no report (see above)")
	}
	failed := map[string]string{}
	for _, list := range [][]entryJSON{r.Criteria, r.Milestones, r.Drills} {
		for _, en := range list {
			if en.Verdict == "failed" || en.Verdict == "harness_error" {
				failed[en.ID] = en.Verdict + ": " + strings.Join(en.failedReasons(), " | ")
			}
		}
	}
	want := map[string]bool{}
	for _, id := range c.fail {
		want[id] = true
	}
	var observed []string
	for id := range failed {
		observed = append(observed, id)
	}
	sort.Strings(observed)
	t.Logf("%s: verdict %s, score %.4g of %.4g measured; failed: %v", c.dir, r.Verdict, r.Score.Earned, r.Score.Measured, observed)

	// Nothing outside the planted defect fails.
	for _, id := range observed {
		if !want[id] {
			t.Errorf("%s failed, but %s plants no defect it should catch: %s", id, c.dir, failed[id])
		}
	}
	// Every entry the defect violates fails (or is pending, named).
	var pending []string
	for _, id := range c.fail {
		_, got := failed[id]
		why, isPending := c.pending[id]
		switch {
		case got && isPending:
			t.Logf("pending mark met in this run: %s failed for %s; remove the mark once the grader measures it reliably", id, c.dir)
		case !got && isPending:
			pending = append(pending, id+" ("+why+")")
		case !got:
			en := findEntry(r, id)
			t.Errorf("%s must fail for %s, but its verdict is %s: %s", id, c.dir, en.Verdict, en.Reason)
		}
	}
	if len(c.fail) == 0 {
		assert.NotEqual(t, "not_passed", r.Verdict, "a good submission: %s", r.VerdictReason)
	} else if len(pending) < len(c.fail) {
		assert.Equal(t, "not_passed", r.Verdict, "a bad submission is not passed: %s", r.VerdictReason)
	}
	if c.zero {
		assert.Zero(t, r.Score.Earned, "%s does nothing and must earn 0 points", c.dir)
		// Every entry is failed or not measured, with a reason; none passed.
		for _, list := range [][]entryJSON{r.Criteria, r.Milestones, r.Drills} {
			for _, en := range list {
				assert.NotEqual(t, "passed", en.Verdict, "%s passed for a submission that does nothing: %s", en.ID, en.Reason)
				assert.NotEmpty(t, en.Reason, "%s: %s without a reason", en.ID, en.Verdict)
			}
		}
	}
	if len(pending) > 0 {
		t.Skipf("pending (the grader does not measure it yet): %s", strings.Join(pending, "; "))
	}
}

func findEntry(r *calibReport, id string) entryJSON {
	for _, list := range [][]entryJSON{r.Criteria, r.Milestones, r.Drills} {
		for _, en := range list {
			if en.ID == id {
				return en
			}
		}
	}
	return entryJSON{ID: id, Verdict: "absent", Reason: "no such entry in report.json"}
}

// TestCalibrationSetIsComplete (no sandboxes): every directory of
// fixtures/submissions is a valid submission, is in calibrationSet (or
// hostileSet, or determinismOnlySet) and in the README's table, and every one but the empty submission has a README that
// names its commands.
func TestCalibrationSetIsComplete(t *testing.T) {
	require.NoError(t, calibrationSetErr)
	subs := filepath.Join("..", "..", "fixtures", "submissions")
	entries, err := os.ReadDir(subs)
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(subs, "README.md"))
	require.NoError(t, err)
	known := map[string]calibrationCase{}
	for _, c := range calibrationSet {
		known[c.dir] = c
	}
	for _, c := range hostileSet { // graded by TestHostileCalibration
		known[c.dir] = calibrationCase{dir: c.dir, fail: c.fail}
	}
	for _, d := range determinismOnlySet { // graded by TestDeterminism
		known[d] = calibrationCase{dir: d}
	}
	for _, c := range hostile2Set { // graded by TestHostileCalibration2
		known[c.dir] = calibrationCase{dir: c.dir, fail: c.fail}
	}
	bad := 0
	for _, de := range entries {
		if !de.IsDir() {
			continue
		}
		name := de.Name()
		dir := filepath.Join(subs, name)
		sub, err := submission.Load(dir)
		if hostile2MayBeRefused[name] && err != nil {
			assert.Contains(t, string(readme), "`"+name+"/`", "fixtures/submissions/README.md's table lists %s", name)
			continue // its manifest is the attack (docs/hostile.md, Round 2)
		}
		if !assert.NoError(t, err, "%s must be a valid submission", name) {
			continue
		}
		c, ok := known[name]
		assert.True(t, ok, "%s is not in calibrationSet (nor hostileSet)", name)
		assert.Contains(t, string(readme), "`"+name+"/`", "fixtures/submissions/README.md's table lists %s", name)
		if strings.HasPrefix(name, "bad-") {
			bad++
			assert.NotEmpty(t, c.fail, "%s plants a defect: it must name the entries it fails", name)
		}
		if c.zero {
			continue
		}
		doc, err := os.ReadFile(filepath.Join(dir, sub.Manifest.Readme))
		if assert.NoError(t, err, "%s: README", name) {
			for _, cmd := range sub.Manifest.Commands() {
				// The README names each command (placeholders may be shown as values).
				prog := strings.Fields(strings.ReplaceAll(cmd.Command, "{acceptance}", "acceptance"))
				assert.Contains(t, string(doc), strings.Join(prog[:min(3, len(prog))], " "), "%s's README names its %s command", name, cmd.Field)
			}
		}
	}
	assert.GreaterOrEqual(t, bad, 10, "at least ten known-bad submissions")
	assert.Len(t, known, len(calibrationSet)+len(hostileSet)+len(hostile2Set)+len(determinismOnlySet), "calibrationSet, hostileSet, hostile2Set and determinismOnlySet have no duplicates")
}

// noisyNeighbour is a local process outside every submission (the test
// itself) that, while a calibration member marked noise is being graded,
// keeps sending the grader's stubs requests nothing attributes to anyone:
// POSTs to the exfiltration sink, uploads to the package index, data API
// calls without a token. It learns the stubs' loopback ports as any local
// process could (through its hooks, handed to the grade call:
// core.Config.StubsStarted); it goes through no sandbox and carries no
// input marker or secret.
type noisyNeighbour struct {
	mu   sync.Mutex
	ups  map[string]string
	sent map[string]int
	stop chan struct{}
	done chan struct{}
}

// startNoisyNeighbour sends its requests while any bundle out/NN-name of
// members (index → name) exists without its report.json yet.
func startNoisyNeighbour(t *testing.T, out string, members map[int]string) *noisyNeighbour {
	n := &noisyNeighbour{sent: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	send := func(stub, method, url, body string) {
		req, err := http.NewRequest(method, url, strings.NewReader(body))
		if err != nil {
			return
		}
		resp, err := client.Do(req)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		n.mu.Lock()
		n.sent[stub]++
		n.mu.Unlock()
	}
	active := func() bool {
		for i, name := range members {
			dir := filepath.Join(out, twoDigits(i+1)+"-"+name)
			if _, err := os.Stat(dir); err != nil {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, "report.json")); err != nil {
				return true
			}
		}
		return false
	}
	go func() {
		defer close(n.done)
		tick := time.NewTicker(700 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-tick.C:
			}
			n.mu.Lock()
			ups := n.ups
			n.mu.Unlock()
			if ups == nil || !active() {
				continue
			}
			send("exfil", "POST", ups[stubs.ExfilHost]+"/collect", "noise from a local process that is no submission")
			send("index", "POST", ups[stubs.PyPIHost]+"/legacy/", "noise upload from a local process that is no submission")
			send("data_api", "GET", ups[stubs.DataAPIHost]+"/v1/regional-targets", "")
		}
	}()
	t.Cleanup(func() { n.Stop() })
	return n
}

// hooks are the grade call's seams through which the neighbour learns the
// stubs' ports.
func (n *noisyNeighbour) hooks() sessionHooks {
	return sessionHooks{stubsStarted: func(ups map[string]string) {
		n.mu.Lock()
		n.ups = ups
		n.mu.Unlock()
	}}
}

// Stop ends the noise (idempotent) and returns how many requests each stub got from it.
func (n *noisyNeighbour) Stop() map[string]int {
	select {
	case <-n.stop:
	default:
		close(n.stop)
	}
	<-n.done
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]int{}
	for k, v := range n.sent {
		out[k] = v
	}
	return out
}

// checkNoiseRecorded: the noise reached the stubs while the member ran, its
// evidence records it as unattributable and not the submission's (the
// class's commands are confined), and the entries that rest on the sink and
// the index (D4, injection) passed: measured, nothing blamed.
func checkNoiseRecorded(t *testing.T, bundle string, sent map[string]int, r *calibReport) {
	t.Helper()
	t.Logf("noise sent while graded: %v", sent)
	require.Positive(t, sent["exfil"], "the noisy neighbour sent nothing: the member's grading was never seen")
	files, _ := filepath.Glob(filepath.Join(bundle, "evidence", "*", "unattributable-requests.json"))
	require.NotEmpty(t, files, "no run of %s recorded the unattributable requests", bundle)
	recorded := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var doc struct {
			Note     string                     `json:"note"`
			Requests map[string][]stubs.Request `json:"requests"`
		}
		require.NoError(t, json.Unmarshal(b, &doc), f)
		assert.Contains(t, doc.Note, "unattributable", f)
		assert.Contains(t, doc.Note, "not this submission's", f)
		for _, q := range doc.Requests["exfil"] {
			assert.Equal(t, "/collect", q.Path)
			assert.Empty(t, q.EgressSandbox)
			recorded++
		}
	}
	assert.Positive(t, recorded, "the sink's unattributable requests are in the evidence")
	if r != nil {
		for _, id := range []string{"D4", "injection"} {
			en := findEntry(r, id)
			assert.Equal(t, "passed", en.Verdict, "%s rests on the sink and the index: unattributable requests there are not the confined submission's (%s)", id, en.Reason)
		}
	}
}

// calibrateTagsEnv restricts TestCalibration to the entries some rubric tags
// name (`make calibrate TAGS=@drill:D5`): a quick check of one entry's
// calibration members instead of the whole set.
const calibrateTagsEnv = "ACCEPTANCE_CALIBRATE_TAGS"

// calibrationSubset is what a tag-restricted calibration grades: the tag
// expression to grade with, the entries the tags name, and the members of
// calibrationSet (indexes) it grades: the good reference and student, and every
// member whose expected failures include a tagged entry. tags is a list of
// rubric tags (@drill:D5, @milestone:M1, @criterion:network) joined by "," or
// spaces.
type calibrationSubset struct {
	expr    string
	entries map[string]bool
	members []int
}

func calibrationSubsetFor(tags string) (calibrationSubset, error) {
	s := calibrationSubset{entries: map[string]bool{}}
	var terms []string
	for _, f := range strings.FieldsFunc(tags, func(r rune) bool { return r == ',' || r == ' ' }) {
		kind, id, ok := strings.Cut(strings.TrimPrefix(f, "@"), ":")
		if !strings.HasPrefix(f, "@") || !ok || id == "" || (kind != "drill" && kind != "milestone" && kind != "criterion") {
			return s, fmt.Errorf("%s=%q: %q is not a rubric tag (want @drill:<id>, @milestone:<id> or @criterion:<id>)", calibrateTagsEnv, tags, f)
		}
		s.entries[id] = true
		terms = append(terms, f)
	}
	if len(terms) == 0 {
		return s, fmt.Errorf("%s=%q names no rubric tag", calibrateTagsEnv, tags)
	}
	// godog reads "," before "&&": (any tagged scenario) and not the large input, as TestCalibration.
	s.expr = strings.Join(terms, ",") + " && ~@large"
	for i, c := range calibrationSet {
		keep := c.dir == "reference" || c.dir == "student"
		for _, id := range c.fail {
			keep = keep || s.entries[id]
		}
		if keep {
			s.members = append(s.members, i)
		}
	}
	return s, nil
}

// TestCalibrationSubset (no sandboxes): a tag-restricted calibration grades the
// good pair and exactly the members that must fail a tagged entry, and refuses
// what is not a rubric tag.
func TestCalibrationSubset(t *testing.T) {
	s, err := calibrationSubsetFor("@drill:D5")
	require.NoError(t, err)
	assert.Equal(t, "@drill:D5 && ~@large", s.expr)
	var dirs []string
	for _, i := range s.members {
		dirs = append(dirs, calibrationSet[i].dir)
	}
	var want []string
	for _, c := range calibrationSet {
		if c.dir == "reference" || c.dir == "student" || slices.Contains(c.fail, "D5") {
			want = append(want, c.dir)
		}
	}
	assert.Equal(t, want, dirs)
	assert.Contains(t, dirs, "bad-no-reap", "D5's planted defect")

	s, err = calibrationSubsetFor("@drill:D2, @criterion:network")
	require.NoError(t, err)
	assert.Equal(t, "@drill:D2,@criterion:network && ~@large", s.expr)
	assert.Equal(t, map[string]bool{"D2": true, "network": true}, s.entries)

	for _, bad := range []string{"", "D5", "@large", "@drill:", "~@drill:D5", "@feature:D5"} {
		_, err := calibrationSubsetFor(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// restrictedTo is c as a tag-restricted calibration checks it: the tagged
// entries it must fail stay required; another expected failure (an entry the
// tagged scenarios also feed, such as observability for D2) is required only
// where this run measured it, since a scenario the tags leave out measures
// nothing. Nothing else may fail, as in the full calibration.
func (c calibrationCase) restrictedTo(entries map[string]bool, r *calibReport) calibrationCase {
	if r == nil {
		return c
	}
	var fail []string
	for _, id := range c.fail {
		if entries[id] || findEntry(r, id).Verdict != "not_measured" {
			fail = append(fail, id)
		}
	}
	c.fail = fail
	return c
}
