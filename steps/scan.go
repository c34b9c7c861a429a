package steps

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/osb-capstone/acceptance/harness/command"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Every subject run is scanned for planted secrets: its
// outputs, stdout, stderr and summary, in every scenario and drill, for that
// run's own API key, the platform key and the data API token. Error paths
// (drills, broken and awkward inputs) are where requests, headers and
// environments get printed, so a leak on any run fails credential and M3,
// naming the run and the file.

// scanLimit bounds how much of one file is scanned; a file beyond it is
// scanned up to it and the finding says so.
const scanLimit = capScanned

// runSecrets are the secrets a run must never write or print, by label.
func (e *Env) runSecrets(r *subjectRun) map[string]string {
	out := map[string]string{}
	add := func(label, v string) {
		if len(v) >= 8 {
			out[label] = v
		}
	}
	add("subject API key", r.APIKey)
	add("platform API key", e.opt.Target.APIKey)
	add("data API token", e.opt.Stubs.DataAPIToken)
	return out
}

// runFiles are what a run wrote or printed: stdout, stderr and every file
// under its output directory (summary.json included).
func runFiles(r *subjectRun) []string {
	var files []string
	if r.Res != nil {
		for _, p := range []string{r.Res.StdoutPath, r.Res.StderrPath} {
			if p != "" {
				files = append(files, p)
			}
		}
	}
	if r.OutDir != "" {
		_ = filepath.WalkDir(r.OutDir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
	}
	return files
}

// scanFileFor reports which of secrets (label → value) occur in the regular
// file at path, reading it in chunks (a chunk boundary never hides one) and
// at most scanLimit bytes. A FIFO, device or socket is not read.
func scanFileFor(path string, secrets map[string]string) (found []string, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	longest := 0
	for _, v := range secrets {
		longest = max(longest, len(v))
	}
	hit := map[string]bool{}
	buf := make([]byte, 0, 1<<20+longest)
	chunk := make([]byte, 1<<20)
	rd := io.LimitReader(f, scanLimit)
	for {
		n, rerr := rd.Read(chunk)
		buf = append(buf, chunk[:n]...)
		for label, v := range secrets {
			if !hit[label] && bytes.Contains(buf, []byte(v)) {
				hit[label] = true
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return nil, rerr
		}
		if keep := longest - 1; len(buf) > keep && keep >= 0 {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
	}
	for label := range hit {
		found = append(found, label)
	}
	sort.Strings(found)
	return found, nil
}

// secretLeaks scans every file of the run: each finding names the secret
// and the file (relative to the bundle); scanned counts the files read.
func (e *Env) secretLeaks(r *subjectRun) (found []string, scanned int) {
	secrets := e.runSecrets(r)
	if len(secrets) == 0 {
		return nil, 0
	}
	for _, p := range runFiles(r) {
		labels, err := scanFileFor(p, secrets)
		if err != nil {
			continue
		}
		scanned++
		rel, rerr := filepath.Rel(e.opt.BundleDir, p)
		if rerr != nil {
			rel = p
		}
		for _, l := range labels {
			found = append(found, l+" in "+rel)
		}
	}
	return found, scanned
}

// scanRunsOf scans, once per run, every subject run a finished scenario
// made or used. A leak fails credential and M3 with an outcome of its own
// (its scenario names the run); a clean run records nothing: the credential
// scenarios say what passed.
func (e *Env) scanRunsOf(s *scenario) {
	runs := append([]*subjectRun(nil), s.runs...)
	if s.run != nil && !containsRun(runs, s.run) {
		runs = append(runs, s.run)
	}
	for _, r := range runs {
		if r == nil || r.Res == nil {
			continue
		}
		if _, done := e.scanned.LoadOrStore(r, true); done {
			continue
		}
		func() {
			found, _ := e.secretLeaks(r)
			if len(found) == 0 {
				return
			}
			reason := fmt.Sprintf("run %q (fixture %s) leaked secrets into what it wrote or printed: %s",
				r.key, r.fixture, strings.Join(found, "; "))
			for _, id := range []rubric.ID{rubric.Credential, rubric.M3} {
				o := rubric.Outcome{ID: id, Verdict: rubric.Failed, Scenario: "secret scan of run " + r.key,
					Reason: reason, Evidence: r.evidence()}
				if err := e.opt.Results.Record(o); err != nil {
					e.progress("  ! could not record the secret scan of %s: %v", r.key, err)
				}
			}
			e.progress("%-13s secret scan of run %s  [credential, M3]\n              %s", string(rubric.Failed), r.key, printable(reason))
		}()
	}
}

// sandboxScanKey marks a run whose sandboxes were checked for planted
// secrets (in Env.scanned, beside the runs whose files were).
type sandboxScanKey struct{ r *subjectRun }

// scanSandboxesOf checks, once per run, what the bundled server saw inside
// and around the sandboxes of every subject run a finished scenario made or
// used, in every scenario, the agent's included (the @agent scenarios have
// no step of their own for it, so an agent that put the keys in its
// sandbox's env would otherwise pass them):
//   - planted secrets in a sandbox's environment, process list or files;
//   - a call of a sandbox to the data API that the vault gave no credential.
//
// Either fails credential and M3 with an outcome of its own ("sandbox scan
// of run …"); the plain credential scenarios make the same checks as steps.
// A clean run records nothing; a sandbox that cannot be scanned is left to
// the credential scenario's own step (not measured there). Only the bundled
// server scans sandboxes and records what its gateway forwarded.
func (e *Env) scanSandboxesOf(ctx context.Context, s *scenario) {
	if !e.mock() {
		return
	}
	runs := append([]*subjectRun(nil), s.runs...)
	if s.run != nil && !containsRun(runs, s.run) {
		runs = append(runs, s.run)
	}
	for _, r := range runs {
		if r == nil || r.Res == nil {
			continue
		}
		if _, done := e.scanned.LoadOrStore(sandboxScanKey{r}, true); done {
			continue
		}
		saw, err := r.Saw(ctx)
		if err != nil || len(saw.Created) == 0 {
			continue // an unreadable audit is the scenario's steps' harness error
		}
		var what []string
		if found, _, _ := e.sandboxSecrets(ctx, saw); len(found) > 0 {
			what = append(what, "planted secrets found inside its sandbox: "+strings.Join(found, "; "))
		}
		what = append(what, e.dataAPIWithoutVault(saw)...)
		if len(what) == 0 {
			continue
		}
		reason := fmt.Sprintf("run %q (fixture %s): %s", r.key, r.fixture, strings.Join(what, "; "))
		for _, id := range []rubric.ID{rubric.Credential, rubric.M3} {
			o := rubric.Outcome{ID: id, Verdict: rubric.Failed, Scenario: "sandbox scan of run " + r.key,
				Reason: reason, Evidence: append(r.evidence(), filepath.Join(r.RelDir, "audit.json"))}
			if err := e.opt.Results.Record(o); err != nil {
				e.progress("  ! could not record the sandbox scan of %s: %v", r.key, err)
			}
		}
		e.progress("%-13s sandbox scan of run %s  [credential, M3]\n              %s", string(rubric.Failed), r.key, printable(clip(reason, 400)))
	}
}

// dataAPIWithoutVault names the calls of the run's sandboxes to the data API
// that left without a credential from the vault (the gateway's record; the
// saw: what the server saw of its key): the check of dataAPIGotRealToken, for every run.
func (e *Env) dataAPIWithoutVault(saw command.Saw) []string {
	host := e.dataAPIHost()
	if host == "" {
		return nil
	}
	var out []string
	for _, ev := range egressRequests(saw) {
		q := ev.EgressRequest
		if !sameHost(q.Host, host) || q.Injected {
			continue
		}
		out = append(out, fmt.Sprintf("sandbox %s called the data API (%s %s) and the vault injected no credential: it left the sandbox with Authorization %s and the API answered %d",
			ev.SandboxID, q.Method, clip(q.Path, 120), q.Authorization, q.Status))
		if len(out) == 3 {
			break
		}
	}
	return out
}

func containsRun(runs []*subjectRun, r *subjectRun) bool {
	for _, x := range runs {
		if x == r {
			return true
		}
	}
	return false
}
