package dockertarget

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"
)

// runRecord is written when a run starts and removed when it has torn down;
// one left behind belongs to a run that crashed (its lock is gone).
type runRecord struct {
	Endpoint  string    `json:"endpoint"`
	Started   time.Time `json:"started"`
	ServerPID int       `json:"server_pid,omitempty"`
	// ServerLog is that run's control plane's log: the sandboxes it names
	// are the only ones the run may remove (its control-plane identity).
	ServerLog string `json:"server_log,omitempty"`
}

func recordPath(dir string) string { return filepath.Join(dir, "run.json") }

func writeRecord(dir string, r runRecord) error {
	b, _ := json.Marshal(r)
	return os.WriteFile(recordPath(dir), b, 0o644)
}

// Labels and names the control plane puts on what it creates (PyPI 1.1.1).
const (
	labelSandboxID = "opensandbox.io/id"
	labelSidecarOf = "opensandbox.io/egress-sidecar-for"
)

// isServerContainer says whether the control plane created c: a sandbox, an
// egress sidecar, or the throwaway execd-archive container.
func isServerContainer(c dc.APIContainers) (id string, ok bool) {
	if v := c.Labels[labelSandboxID]; v != "" {
		return v, true
	}
	if v := c.Labels[labelSidecarOf]; v != "" {
		return v, true
	}
	for _, n := range c.Names {
		if strings.HasPrefix(strings.TrimPrefix(n, "/"), "sandbox-execd-") {
			return "", true
		}
	}
	return "", false
}

// staleExecdArchive is how old a throwaway execd-archive container must be
// before a run that did not create it may remove it: the control plane makes
// and removes one within a second or two, so an older one belongs to a
// control plane that died; a fresh one may be another live run's.
const staleExecdArchive = 5 * time.Minute

// sandboxIDRe finds the sandbox ids a control plane's log names: its own
// Docker operations ("sandbox=<id> | action=create sandbox container", every
// version since 0.2) and its access log ("DELETE /v1/sandboxes/<id> …").
var sandboxIDRe = regexp.MustCompile(`(?:sandbox=|/sandboxes/)([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})`)

// loggedSandboxes is the set of sandbox ids a control plane's log names: the
// sandboxes that control plane created or was asked about. It is a run's
// control-plane identity on a shared engine: containers carry no mark of the
// control plane that made them (OpenSandbox labels only the sandbox id), and
// more than one control plane (another checkout's run, a test) may use one
// engine, so "created since I started" is not "mine".
func loggedSandboxes(log string) map[string]bool {
	out := map[string]bool{}
	for _, m := range sandboxIDRe.FindAllStringSubmatch(log, -1) {
		out[strings.ToLower(m[1])] = true
	}
	return out
}

// removable says whether a run whose control plane's log names the sandboxes
// owned, and which started at since, may remove container c: a sandbox or a
// sidecar of a sandbox it owns, created after it started; or a throwaway
// execd-archive container old enough to be a dead control plane's. Nothing
// else, whatever its labels: another control plane's sandbox on the same
// engine is never touched.
func removable(c dc.APIContainers, owned map[string]bool, since, now time.Time) (sandboxID string, ok bool) {
	sid, server := isServerContainer(c)
	if !server {
		return "", false
	}
	created := time.Unix(c.Created, 0)
	if sid == "" { // the execd-archive throwaway: it names no sandbox
		return "", now.Sub(created) >= staleExecdArchive
	}
	if !owned[strings.ToLower(sid)] || created.Before(since.Add(-2*time.Second)) {
		return "", false
	}
	return sid, true
}

// removeServerContainers force-removes (with their anonymous volumes) the
// containers of the sandboxes the control plane whose log is serverLog
// created at or after since (removable), and those sandboxes' runtime
// volumes. It returns how many containers it removed.
func removeServerContainers(pool *dockertest.Pool, since time.Time, serverLog string) (int, error) {
	owned := loggedSandboxes(readFile(serverLog))
	list, err := pool.Client.ListContainers(dc.ListContainersOptions{All: true})
	if err != nil {
		return 0, err
	}
	n := 0
	ids := map[string]bool{}
	var firstErr error
	now := time.Now()
	for _, c := range list {
		sid, ok := removable(c, owned, since, now)
		if !ok {
			continue
		}
		if err := pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true}); err != nil {
			var nf *dc.NoSuchContainer
			if errors.As(err, &nf) {
				continue
			}
			if firstErr == nil {
				firstErr = fmt.Errorf("removing container %s: %w", c.ID[:12], err)
			}
			continue
		}
		n++
		if sid != "" {
			ids[sid] = true
		}
	}
	for sid := range ids {
		_ = pool.Client.RemoveVolumeWithOptions(dc.RemoveVolumeOptions{Name: "opensandbox-runtime-" + sid, Force: true})
	}
	return n, firstErr
}

// reapCrashed cleans up after a run that died without tearing down: its
// control plane (if that process still runs) and what it created. The caller
// holds the lock, so that run is provably over.
func reapCrashed(pool *dockertest.Pool, dir, endpoint string) (string, error) {
	b, err := os.ReadFile(recordPath(dir))
	if err != nil {
		return "", nil
	}
	var r runRecord
	if json.Unmarshal(b, &r) != nil || r.Endpoint != endpoint {
		_ = os.Remove(recordPath(dir))
		return "", nil
	}
	killed := ""
	if r.ServerPID > 0 && isOurServer(r.ServerPID) {
		_ = syscall.Kill(-r.ServerPID, syscall.SIGKILL)
		_ = syscall.Kill(r.ServerPID, syscall.SIGKILL)
		killed = fmt.Sprintf("; killed its control plane (pid %d)", r.ServerPID)
	}
	n, err := removeServerContainers(pool, r.Started, r.ServerLog)
	if err != nil {
		return "", err
	}
	_ = os.Remove(recordPath(dir))
	return fmt.Sprintf("reaped a crashed run from %s: %d containers%s", r.Started.Format(time.RFC3339), n, killed), nil
}

// isOurServer is true when pid runs opensandbox-server.
func isOurServer(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return err == nil && strings.Contains(string(b), "opensandbox-server")
}
