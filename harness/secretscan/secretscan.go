// Package secretscan looks for the secrets planted for a grade where a
// submission must never have put them. Every subject run is scanned, in
// every scenario and drill: error paths (drills, broken and awkward inputs)
// are where requests, headers and environments get printed, so a leak on
// any run fails credential and M3, naming the run and the file.
//
//   - Leaks: what a run wrote or printed (its stdout, stderr and every file
//     under its output directory, Files) for its own API key, the platform
//     key and the data API token (Secrets). A file is read in chunks (a
//     chunk boundary never hides a secret), at most Limit bytes, never
//     through a link, never a FIFO, device or socket (ScanFile).
//   - InSandboxes: the planted secrets the bundled server found inside a
//     run's sandboxes (their environment, process list or files), scanned
//     at removal, or now for one the subject left alive.
//   - DataAPIWithoutVault: calls of a run's sandboxes to the data API that
//     left without a credential from the vault (the egress gateway's record).
//
// The package records nothing: the steps turn a finding into the outcomes
// of the entries it fails.
package secretscan

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Limit bounds how much of one file is scanned; a file beyond it is
// scanned up to it.
const Limit = 64 << 20

// Secrets are the secrets a run must never write or print, by label (a
// value under 8 bytes is not looked for: it would match by chance).
func Secrets(subjectKey, platformKey, dataAPIToken string) map[string]string {
	out := map[string]string{}
	add := func(label, v string) {
		if len(v) >= 8 {
			out[label] = v
		}
	}
	add("subject API key", subjectKey)
	add("platform API key", platformKey)
	add("data API token", dataAPIToken)
	return out
}

// Files are what a run wrote or printed: stdout, stderr and every file
// under its output directory (summary.json included).
func Files(res *subject.Result, outDir string) []string {
	var files []string
	if res != nil {
		for _, p := range []string{res.StdoutPath, res.StderrPath} {
			if p != "" {
				files = append(files, p)
			}
		}
	}
	if outDir != "" {
		_ = filepath.WalkDir(outDir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				files = append(files, p)
			}
			return nil
		})
	}
	return files
}

// Leaks scans files for secrets: each finding names the secret and the file
// (relative to base); scanned counts the files read.
func Leaks(files []string, secrets map[string]string, base string) (found []string, scanned int) {
	if len(secrets) == 0 {
		return nil, 0
	}
	for _, p := range files {
		labels, err := ScanFile(p, secrets)
		if err != nil {
			continue
		}
		scanned++
		rel, rerr := filepath.Rel(base, p)
		if rerr != nil {
			rel = p
		}
		for _, l := range labels {
			found = append(found, l+" in "+rel)
		}
	}
	return found, scanned
}

// ScanFile reports which of secrets (label → value) occur in the regular
// file at path, reading it in chunks (a chunk boundary never hides one) and
// at most Limit bytes. A FIFO, device or socket is not read.
func ScanFile(path string, secrets map[string]string) (found []string, err error) {
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
	rd := io.LimitReader(f, Limit)
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

// InSandboxes are the planted secrets the bundled server found inside
// the run's sandboxes (saw: what the server saw of its key): in their environment,
// process list or files, each "label in location (where) of sandbox". The
// server scans a sandbox when it is removed; one the subject left alive is
// scanned now, as it stands (live names them). unscannable says why a
// sandbox was neither scanned at removal nor scannable now ("" if none was).
func InSandboxes(ctx context.Context, client *osb.Client, saw command.Saw) (found, live []string, unscannable string) {
	scanned := map[string]bool{}
	for _, ev := range saw.Events {
		if ev.Kind != "canary" || ev.Canary == nil {
			continue
		}
		if ev.Canary.Location == "scan" {
			scanned[ev.SandboxID] = true
			continue
		}
		found = append(found, fmt.Sprintf("%s in %s (%s) of %s", ev.Canary.Label, ev.Canary.Location, ev.Canary.Where, ev.SandboxID))
	}
	if len(found) > 0 {
		return found, nil, ""
	}
	for _, id := range saw.Created {
		if scanned[id] {
			continue
		}
		findings, err := liveScan(ctx, client, id)
		if err != nil {
			if unscannable == "" {
				unscannable = fmt.Sprintf("sandbox %s was neither scanned at removal nor scannable now: %v", id, err)
			}
			continue
		}
		for _, f := range findings {
			found = append(found, fmt.Sprintf("%s in %s (%s) of %s, still alive", f.Label, f.Location, f.Where, id))
		}
		live = append(live, id)
	}
	return found, live, unscannable
}

// liveScan asks the bundled server to scan a sandbox that still exists.
func liveScan(ctx context.Context, client *osb.Client, id string) ([]wire.Canary, error) {
	c, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := client.Admin().CanaryScan(c, id)
	if err != nil {
		return nil, err
	}
	if !res.Decoded {
		return nil, fmt.Errorf("canary scan answered %d: %s", res.Status, excerpt(res.Body, 200))
	}
	return res.Value.Findings, nil
}

// DataAPIWithoutVault names the calls of the run's sandboxes to the data API
// that left without a credential from the vault (the gateway's record; the
// saw: what the server saw of its key; host: the data API's): the check of
// dataAPIGotRealToken, for every run.
func DataAPIWithoutVault(saw command.Saw, host string) []string {
	if host == "" {
		return nil
	}
	var out []string
	for _, ev := range command.EgressRequests(saw.Events) {
		q := ev.EgressRequest
		if !command.SameHost(q.Host, host) || q.Injected {
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

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func excerpt(b []byte, n int) string { return clip(string(b), n) }
