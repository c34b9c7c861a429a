package dockertarget

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/ory/dockertest/v3"
)

// DefaultSocket is the socket of the project's engine (.ci/docker-engine.sh).
const DefaultSocket = "/run/osb-acceptance/docker.sock"

// Endpoint is the Docker endpoint to use: $DOCKER_HOST, else the project's
// engine, else the system default socket.
func Endpoint() string {
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		return h
	}
	if _, err := os.Stat(DefaultSocket); err == nil {
		return "unix://" + DefaultSocket
	}
	return "unix:///var/run/docker.sock"
}

// Connect opens a dockertest pool on the endpoint and checks it answers.
func Connect(ctx context.Context, endpoint string) (*dockertest.Pool, error) {
	pool, err := dockertest.NewPool(endpoint)
	if err != nil {
		return nil, fmt.Errorf("docker at %s: %w", endpoint, err)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Client.PingWithContext(pctx); err != nil {
		return nil, fmt.Errorf("docker at %s does not answer (start it with `make docker-engine`): %w", endpoint, err)
	}
	pool.MaxWait = 60 * time.Second
	return pool, nil
}

// lock is an exclusive flock held for the life of one docker-target run on an
// engine: the next run can then tell that leftovers are provably dead.
type lock struct{ f *os.File }

// acquireLock takes the engine's lock, waiting up to wait while another
// docker-target run holds it (one line on log says so); the engine is
// shared by every checkout on the machine.
func acquireLock(ctx context.Context, dir string, wait time.Duration, log io.Writer) (*lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "target.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	said := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return &lock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			_ = f.Close()
			return nil, err
		}
		if !time.Now().Before(deadline) {
			_ = f.Close()
			return nil, fmt.Errorf("another docker-target run holds %s (waited %s; OSB_DOCKER_LOCK_WAIT sets how long)", f.Name(), wait.Round(time.Second))
		}
		if !said && log != nil {
			fmt.Fprintf(log, "docker target: another docker-target run holds %s; waiting up to %s\n", f.Name(), wait.Round(time.Second))
			said = true
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
}

// lockWait is how long a run waits for the engine's lock: $OSB_DOCKER_LOCK_WAIT
// (a Go duration), else 15 minutes.
func lockWait() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("OSB_DOCKER_LOCK_WAIT")); err == nil && d >= 0 {
		return d
	}
	return 15 * time.Minute
}

func (l *lock) release() {
	if l != nil && l.f != nil {
		_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
		_ = l.f.Close()
	}
}

// stateDir is where a run keeps its lock, config and pid file.
// CacheDir is where the docker target keeps what it builds once per machine
// (the sandbox root filesystems, the control planes' venvs, run-time pins):
// OSB_DOCKER_CACHE when set, else /var/cache/osb-acceptance/docker-target for
// root (the engine is per machine, and so is what it is fed), else the user's
// cache directory. Every checkout on the machine shares it, so a second
// checkout (a CI clone, a worktree) starts warm. Everything in it is keyed by
// content and written whole (a temporary name, then a rename), and the builds
// run under the engine's run lock, so two checkouts never build one thing at
// once.
func CacheDir() string {
	if d := os.Getenv("OSB_DOCKER_CACHE"); d != "" {
		return d
	}
	if os.Geteuid() == 0 {
		return "/var/cache/osb-acceptance/docker-target"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "osb-acceptance", "docker-target")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("osb-acceptance-%d", os.Geteuid()), "docker-target")
}

func stateDir() string {
	if d := os.Getenv("OSB_DOCKER_TARGET_STATE"); d != "" {
		return d
	}
	return "/var/lib/osb-acceptance/target"
}

func shortHash(s string) string {
	s = strings.TrimPrefix(s, "sha256:")
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
