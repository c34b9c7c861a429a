package dockertarget

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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

// removeServerContainers force-removes (with their anonymous volumes) every
// container the control plane created at or after since, and the runtime
// volumes of those sandboxes. It returns how many containers it removed.
func removeServerContainers(pool *dockertest.Pool, since time.Time) (int, error) {
	list, err := pool.Client.ListContainers(dc.ListContainersOptions{All: true})
	if err != nil {
		return 0, err
	}
	n := 0
	ids := map[string]bool{}
	var firstErr error
	for _, c := range list {
		sid, ok := isServerContainer(c)
		if !ok || time.Unix(c.Created, 0).Before(since.Add(-2*time.Second)) {
			continue
		}
		if err := pool.Client.RemoveContainer(dc.RemoveContainerOptions{ID: c.ID, Force: true, RemoveVolumes: true}); err != nil {
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
	n, err := removeServerContainers(pool, r.Started)
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
