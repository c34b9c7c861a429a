// Package runtime turns a sandbox spec into a real, isolated Linux sandbox:
// its own named network namespace (loopback only, plus the egress relay when a
// policy exists), a bubblewrap mount/PID/IPC/UTS namespace with /workspace,
// /tmp, /root, a private /var and /dev/shm writable (all on the sandbox's own
// disk-limited storage, listed by Writable for the scans) and the rest read-only, Docker's default capabilities, a clean environment,
// and a per-sandbox cgroup for limits and freezing. Inside it runs the agent
// (mock-server/agent): execd, and the egress sidecar when asked for.
package runtime

import (
	"context"
	"errors"
	"net"
	"os"
	"time"
)

// Limits are the enforced resource limits. Zero means "not limited".
type Limits struct {
	MemoryBytes int64
	Pids        int64
	CPUMilli    int64 // 1000 = one CPU
}

// Spec describes one sandbox to start.
type Spec struct {
	ID         string
	Profile    Profile           // from ProfileFor(image)
	Entrypoint []string          // runs as the sandbox's main process
	Env        map[string]string // the request's env (null values already dropped)
	Limits     Limits
	// GatewaySocket, when non-empty, is a host unix socket path that is mounted
	// into the sandbox at /run/osb/gateway.sock; the agent then runs the egress
	// sidecar (DNS on 127.0.0.1:53, relays on :80/:443, proxy on :3128).
	GatewaySocket string
	// ExtraFiles are host files mounted read-only into the sandbox, keyed by the
	// in-sandbox path (e.g. a CA bundle at /etc/ssl/certs/ca-certificates.crt).
	ExtraFiles map[string]string
	// Mounts are host-path volumes (already checked against the allow list).
	Mounts []Mount
	// Seed restores a snapshot: in-sandbox writable directory (/workspace,
	// /tmp, /root, /var) → a host directory, written by the server, whose
	// directories and regular files are copied in before the sandbox starts.
	Seed map[string]string
	// Group, when set, puts the sandbox's cgroups under a parent group of
	// that name shared by the sandboxes of one tenant, limited by
	// GroupLimits: what those sandboxes use together (processes, memory,
	// CPU time), whatever each one's own limits. The group is removed with
	// its last sandbox. It must be a plain name (letters, digits, '-', '_', '.').
	Group       string
	GroupLimits Limits
}

// Mount is a host directory (or file) bind-mounted into the sandbox.
type Mount struct {
	Host     string // canonical host path
	Path     string // absolute in-sandbox path
	ReadOnly bool
	// File, when set, is an open descriptor (OpenBeneath) of
	// what to bind: the mount is made from it (bwrap --bind-fd, which checks
	// the mounted inode is the descriptor's), never by resolving Host again.
	// The caller keeps ownership (close it once Create returns).
	File *os.File
}

// Profile is what an image name maps to on this host.
type Profile struct {
	Name string            // e.g. "python", "debian"
	Env  map[string]string // the image's own ENV (as a Dockerfile would set it)
	// CodeInterpreter: the image carries the code interpreter's runtime (as
	// opensandbox/code-interpreter carries Jupyter), so execd's code
	// contexts work in it; in any other image they answer execd's "language
	// runtime server not configured".
	CodeInterpreter bool
}

// State is what the lifecycle layer reports for a sandbox (CONTRACT §1.6).
type State struct {
	State    string // Running | Paused | Terminated | Failed
	Reason   string // CONTAINER_RUNNING, CONTAINER_PAUSED, CONTAINER_EXITED, CONTAINER_EXITED_ERROR
	Message  string
	ExitCode int
	Since    time.Time
}

// Sandbox is one live sandbox.
type Sandbox interface {
	ID() string
	// DialExecd connects to the agent's execd HTTP server (a unix socket
	// created by the host and handed to the agent as an inherited fd).
	DialExecd(ctx context.Context) (net.Conn, error)
	State() State
	Pause() error  // freezes every process of the sandbox (cgroup freezer or SIGSTOP)
	Resume() error // thaws them
	// Destroy kills every process, removes the network namespace, cgroups and
	// the sandbox's directories. Safe to call twice.
	Destroy() error
	// Dir is the host directory holding the sandbox's state (workspace, tmp, ...).
	Dir() string
	// Pids lists host pids of the sandbox's processes (for canary scans, leak checks).
	Pids() []int
}

// ContainerLogger is a Sandbox that keeps a container log, as Docker keeps
// one for a container: what the sandbox's agent and entrypoint wrote (not its
// commands' output, which execd streams to the caller), each line prefixed
// with the time it was written as `docker logs --timestamps` prints it.
type ContainerLogger interface {
	ContainerLog() ([]byte, error)
}

// Runtime creates sandboxes.
type Runtime interface {
	// Create starts the sandbox and returns once execd answers /ping.
	Create(ctx context.Context, spec Spec) (Sandbox, error)
	// Isolation says whether namespaces are really enforced, and why not.
	Isolation() (enforced bool, reason string)
	// Enforced lists which limits are really enforced (for /_mock/info and the README).
	Enforced() map[string]bool
	// Reap removes what a previous, killed server left in the state dir
	// (processes, network namespaces, cgroups, directories). Returns what it removed.
	Reap() ([]string, error)
	Close() error
}

// ErrUnknownImage is returned (wrapped) by ProfileFor for images with no host profile.
type ErrUnknownImage struct{ Image string }

func (e ErrUnknownImage) Error() string {
	return "image " + e.Image + " has no host profile here (known: python:3.x, python, debian, ubuntu, bash)"
}

// Errors of Sandbox.Pause/Resume (the lifecycle layer maps them to 409/400-style
// service errors; they are client mistakes, never 500s).
var (
	// ErrNotRunning: Pause or Resume of a sandbox whose main process (or agent) has exited, or that was destroyed.
	ErrNotRunning = errors.New("sandbox is not running")
	// ErrNotPaused: Resume of a sandbox that is not paused.
	ErrNotPaused = errors.New("sandbox is not paused")
	// ErrAlreadyPaused: Pause of a paused sandbox.
	ErrAlreadyPaused = errors.New("sandbox is already paused")
)

// Quiescer is implemented by sandboxes that can be stopped for good before
// their final scan (every process killed; files, namespace and cgroups kept
// until Destroy).
type Quiescer interface {
	Quiesce(timeout time.Duration) error
}
