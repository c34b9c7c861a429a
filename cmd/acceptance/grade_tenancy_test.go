package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// carelessRun creates a sandbox for the run, waits for its execd to answer
// (a real server answers the create before execd listens), runs one command
// in it (so D5 kills it early) and then waits to be killed.
const carelessRun = `"""A run that reaches its first command at once, then waits to be killed (D5)."""
import json, os, time, urllib.request
from osbhttp import call

req = {"image": {"uri": "python:3.12"}, "entrypoint": ["tail", "-f", "/dev/null"], "timeout": 600,
       "resourceLimits": {"cpu": "1", "memory": "1Gi"},
       "metadata": {"capstone-run-id": os.environ.get("CAPSTONE_RUN_ID", "")}}
st, sb = call("POST", "/v1/sandboxes", req)
sid = sb["id"]
st, ep = call("GET", "/v1/sandboxes/%s/endpoints/44772" % sid)
headers = {"Content-Type": "application/json"}
headers.update(ep.get("headers") or {})
base = "http://" + ep["endpoint"]
# Wait until execd answers, as every SDK does after a create: a real server
# answers the create once the container started, before execd listens.
deadline = time.time() + 60
while True:
    try:
        with urllib.request.urlopen(urllib.request.Request(base + "/ping", headers=headers), timeout=5) as resp:
            if resp.status == 200:
                break
    except Exception:  # not listening yet: refused, reset, 502 through a proxy
        pass
    if time.time() > deadline:
        raise SystemExit("execd never answered /ping")
    time.sleep(0.2)
r = urllib.request.Request(base + "/command", data=json.dumps({"command": "true"}).encode(),
                           method="POST", headers=headers)
with urllib.request.urlopen(r, timeout=60) as resp:
    resp.read()
time.sleep(600)
`

// carelessReap deletes every sandbox it can list, again and again for a
// while, and logs each round (time before and after the list, the ids it
// listed and what each DELETE answered) as a JSON line to the file named
// by its argument: a file in its {out}, which the grader copies into the
// bundle (a confined command sees no host path).
const carelessReap = `"""D5 done carelessly: delete every sandbox the key can list, for a while."""
import json, sys, time
from osbhttp import call

LOG = sys.argv[1]
end = time.time() + %d
with open(LOG, "a") as log:
    while time.time() < end:
        t0 = time.time()
        st, page = call("GET", "/v1/sandboxes?pageSize=200")
        t1 = time.time()
        ids = [it["id"] for it in page.get("items", [])]
        deleted = {}
        for sid in ids:
            deleted[sid], _ = call("DELETE", "/v1/sandboxes/%%s" %% sid)
        log.write(json.dumps({"t0": t0, "t1": t1, "status": st, "ids": ids, "deleted": deleted}) + "\n")
        log.flush()
        time.sleep(0.2)
`

type sandboxLife struct{ from, to float64 }

// gradeCarelessBesideCareful grades the careless and the careful submission
// at once on D5 with the extra grade arguments, and checks the careful one
// passes D5 and the careless reap never listed a sandbox of the other's,
// though one was alive during its rounds (lives: every sandbox's life, given
// the careful submission's bundle).
func gradeCarelessBesideCareful(t *testing.T, e subjectEnv, extra []string, lives func(goodBundle string) map[string]*sandboxLife) {
	t.Setenv("PATH", filepath.Join(e.root, ".cache", "py-sdk", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))

	tmp := t.TempDir()
	good, careless := filepath.Join(tmp, "good"), filepath.Join(tmp, "careless")
	for _, d := range []string{good, careless} {
		out, err := exec.Command("cp", "-r", filepath.Join("testdata", "submission"), d).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	const reapSeconds = 40
	// The careful submission's reap waits a while before it removes its
	// killed run's sandbox, so that sandbox is alive while the careless reap
	// lists, round after round (the drills fire on each run's own progress:
	// without the wait the two reaps may never overlap, and the test would
	// prove nothing about tenancy).
	goodReap := mustReadFile(t, filepath.Join(good, "reap.py"))
	require.NoError(t, os.WriteFile(filepath.Join(good, "reap.py"), append([]byte("import time\ntime.sleep(20)\n"), goodReap...), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(careless, "careless_run.py"), []byte(carelessRun), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(careless, "reap.py"), []byte(fmt.Sprintf(carelessReap, reapSeconds)), 0o644))
	manifest := mustReadFile(t, filepath.Join(careless, "capstone.yaml"))
	manifest = bytes.Replace(manifest, []byte(`reap: "python3 reap.py"`), []byte(`reap: "python3 reap.py {out}/careless-reap.jsonl"`), 1)
	require.Contains(t, string(manifest), "careless-reap.jsonl")
	manifest = bytes.Replace(manifest, []byte(`run: "{acceptance} reference --csv {csv} --question {question} --out {out}"`),
		[]byte(`run: "python3 careless_run.py --csv {csv} --question {question} --out {out}"`), 1)
	require.Contains(t, string(manifest), "careless_run.py")
	manifest = bytes.Replace(manifest, []byte("name: testdata-reference"), []byte("name: careless-reaper"), 1)
	require.NoError(t, os.WriteFile(filepath.Join(careless, "capstone.yaml"), manifest, 0o644))

	class := filepath.Join(keptDir(t, "careless-reap"), "class")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	args := append([]string{"grade", "--out", class, "--wheels", e.wheels,
		"--baselines", t.TempDir(), "--parallel", "2", "--seed", "1", "--tags", "@drill:D5"}, extra...)
	code := dispatch(append(args, careless, good), &stdout, &stderr)
	t.Logf("acceptance grade: exit %d in %s\n%s%s", code, time.Since(start).Round(time.Second), stdout.String(), stderr.String())

	docs := map[string]report.Document{}
	bundles := map[string]string{}
	for i, name := range []string{"careless", "good"} {
		m, err := filepath.Glob(filepath.Join(class, fmt.Sprintf("%02d-*", i+1)))
		require.NoError(t, err)
		require.Len(t, m, 1, name)
		bundles[name] = m[0]
		docs[name], err = report.ReadDocument(m[0])
		require.NoError(t, err)
	}
	d5 := func(doc report.Document) (rubric.Verdict, string) {
		for _, r := range doc.AllEntries() {
			if r.ID == "D5" {
				return r.Verdict, r.Reason
			}
		}
		return "", "no D5 entry"
	}
	v, reason := d5(docs["good"])
	assert.Equal(t, rubric.Passed, v, "the careful submission passes D5 beside the careless one: %s", reason)

	// What the careless reap listed, round by round.
	type round struct {
		T0, T1  float64
		Status  int
		IDs     []string
		Deleted map[string]int
	}
	var rounds []round
	listed := map[string]bool{}
	logs, err := filepath.Glob(filepath.Join(bundles["careless"], "evidence", "subject-reap*", "out", "careless-reap.jsonl"))
	require.NoError(t, err)
	require.Len(t, logs, 1, "the careless reap ran and its log was copied out of its {out}")
	f, err := os.Open(logs[0])
	require.NoError(t, err, "the careless reap ran")
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r round
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		require.Equal(t, 200, r.Status)
		rounds = append(rounds, r)
		for _, id := range r.IDs {
			listed[id] = true
			assert.Equal(t, 204, r.Deleted[id], "its own sandbox %s: deleted", id)
		}
	}
	f.Close()
	require.NoError(t, sc.Err())
	require.NotEmpty(t, rounds)
	require.NotEmpty(t, listed, "the careless reap saw (and deleted) its own residual sandbox")

	lifeOf := lives(bundles["good"])
	// Another submission's sandbox was alive during a round, and no round
	// listed it: tenancy, not luck, kept it.
	var others []string
	overlapped := false
	for id := range livesFromRecordedCalls(t, bundles["good"]) {
		assert.False(t, listed[id], "the careless reap never listed the careful submission's sandbox %s", id)
	}
	for id, l := range lifeOf {
		if listed[id] {
			continue
		}
		others = append(others, id)
		for _, r := range rounds {
			if l.from < r.T0 && r.T1 < l.to {
				overlapped = true
			}
		}
	}
	require.NotEmpty(t, others, "the careful submission created sandboxes")
	assert.True(t, overlapped, "the careless reap listed while another submission's sandbox was alive (%d rounds, others %s)", len(rounds), strings.Join(others, ", "))
}

// livesFromAudit is every sandbox of the bundled server's audit trail with
// its life: created → deleted or expired.
func livesFromAudit(t *testing.T, auditFile string) map[string]*sandboxLife {
	lives := map[string]*sandboxLife{}
	af, err := os.Open(auditFile)
	require.NoError(t, err)
	defer af.Close()
	asc := bufio.NewScanner(af)
	asc.Buffer(make([]byte, 1<<20), 64<<20)
	for asc.Scan() {
		var ev struct {
			Time      time.Time `json:"time"`
			SandboxID string    `json:"sandbox_id"`
			Kind      string    `json:"kind"`
			State     *struct {
				To string `json:"to"`
			} `json:"state"`
		}
		if json.Unmarshal(asc.Bytes(), &ev) != nil || ev.SandboxID == "" || ev.Kind != "state" || ev.State == nil {
			continue
		}
		ts := float64(ev.Time.UnixNano()) / 1e9
		l := lives[ev.SandboxID]
		if l == nil {
			l = &sandboxLife{from: ts, to: math.Inf(1)}
			lives[ev.SandboxID] = l
		}
		if ev.State.To == "Deleted" || ev.State.To == "Expired" {
			l.to = ts
		}
	}
	require.NoError(t, asc.Err())
	return lives
}

// livesFromRecordedCalls is every sandbox a bundle's submission created,
// from the recording proxy's calls in its evidence (evidence/subject-*/
// audit.json): created (202) → deleted (204) or, never deleted, still alive.
func livesFromRecordedCalls(t *testing.T, bundle string) map[string]*sandboxLife {
	files, err := filepath.Glob(filepath.Join(bundle, "evidence", "subject-*", "audit.json"))
	require.NoError(t, err)
	lives := map[string]*sandboxLife{}
	for _, f := range files {
		var evs []struct {
			Time      time.Time `json:"time"`
			SandboxID string    `json:"sandbox_id"`
			Lifecycle *struct {
				Method string `json:"method"`
				Status int    `json:"status"`
			} `json:"lifecycle"`
		}
		require.NoError(t, json.Unmarshal(mustReadFile(t, f), &evs), f)
		for _, ev := range evs {
			if ev.SandboxID == "" || ev.Lifecycle == nil {
				continue
			}
			ts := float64(ev.Time.UnixNano()) / 1e9
			switch {
			case ev.Lifecycle.Method == "POST" && ev.Lifecycle.Status == 202:
				if lives[ev.SandboxID] == nil {
					lives[ev.SandboxID] = &sandboxLife{from: ts, to: math.Inf(1)}
				}
			case ev.Lifecycle.Method == "DELETE" && ev.Lifecycle.Status == 204 && lives[ev.SandboxID] != nil:
				lives[ev.SandboxID].to = ts
			}
		}
	}
	return lives
}
