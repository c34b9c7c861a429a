//go:build linux

package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// How a sandbox is built (see design.md "Process model"):
//
//   - <StateDir>/sandboxes/<id>/ holds workspace/, tmp/, home/ (bound at
//     /workspace, /tmp, /root), etc/ (generated passwd, group, hosts,
//     resolv.conf, nsswitch.conf, hostname), execd.sock, agent.log, meta.json.
//   - A named netns osb-<first 12 of id> (loopback only; unprivileged ports
//     from 0), cgroups <ctrl>/osb/<id> (v1 memory, pids, cpu, freezer; pure v2
//     supported but untested here), or <ctrl>/osb/<Spec.Group>/<id> inside a
//     group shared by one tenant's sandboxes and limited by Spec.GroupLimits
//     (removed with its last sandbox).
//   - /bin/sh writes its own pid into the cgroups, then execs nsenter → bwrap →
//     /.osb/agent __osb_agent__ (the agent binary bound read-only).
//   - fd 3: the execd listener (created on the host, never mounted inside);
//     fd 4: AgentConfig JSON then EOF (also the "go" signal, so nothing runs
//     before it is in the cgroups); fd 5: AgentEvent lines (entrypoint exit).
//     None of them is inherited by commands (close-on-exec in the agent).
//   - Only PATH, HOME and LANG are on bwrap's command line; the rest of the
//     sandbox environment travels in AgentConfig, so host `ps` shows no secrets.
//   - When the entrypoint exits, State() becomes Terminated (0) or Failed
//     (≠0, CONTAINER_EXITED_ERROR) while execd keeps serving, so files and logs
//     stay readable until the sandbox is deleted. A dead agent is Failed too.
//   - Insecure mode (AllowInsecureNoIsolation when isolation is impossible, or
//     ForceInsecure): the agent runs as a plain host process with a clean
//     environment and client paths mapped under the sandbox directory; no
//     netns, no cgroups (Pause uses SIGSTOP). /workspace is each sandbox's
//     own through the workspace link (workspacelink_linux.go), where it can
//     be made.

// Options configure the Linux runtime.
type Options struct {
	// StateDir holds sandboxes/<id>/{workspace,tmp,home,etc,execd.sock,agent.log,meta.json}.
	StateDir string
	// AgentPath is the binary started as the in-sandbox agent with
	// os.Args[1]==AgentArg (default: os.Executable(), i.e. this binary; its
	// main or TestMain must call agent.MainIfAgent first).
	AgentPath string
	// AllowInsecureNoIsolation starts sandboxes as plain host processes (clean
	// environment and their own directories only) when namespaces are not
	// available, instead of failing. Isolation() then reports false.
	AllowInsecureNoIsolation bool
	// ForceInsecure uses insecure mode even where isolation would work (tests).
	ForceInsecure bool
	// WorkspaceLink is where insecure mode makes the workspace link
	// (workspacelink_linux.go): default /workspace, except with ForceInsecure
	// (a test on a host that has namespaces gives a path of its own).
	WorkspaceLink string
	// ReadyTimeout bounds Create's wait for execd /ping (default 20 s).
	ReadyTimeout time.Duration
	// CommandCloseDelay is how long execd keeps an SSE stream open after the
	// terminal event (real execd: 1 s). Default 0.
	CommandCloseDelay time.Duration
	// DiskLimitBytes caps what a sandbox can write (workspace, tmp, home and
	// its own state files together): its directory is a tmpfs of this size
	// (isolating mode only). 0 = DefaultDiskLimit; negative = no limit.
	DiskLimitBytes int64
}

// DefaultDiskLimit is a sandbox's default disk limit (1 GiB).
const DefaultDiskLimit = 1 << 30

// Linux is the namespace + bubblewrap + cgroup runtime.
type Linux struct {
	opts     Options
	secure   bool
	reason   string
	bwrap    string
	nsenter  string
	setpriv  string // /usr/bin/setpriv when present (visible inside the sandbox)
	prlimit  string // prlimit(1), for insecure sandboxes' rlimits
	ip       string
	cg       *cgroups
	stateDir string

	// asUID: insecure sandboxes run as uids of their own (uid_linux.go);
	// uidWhy says why not when insecure and not asUID.
	asUID   bool
	uidWhy  string
	uids    map[int]bool // uids of live sandboxes
	nextUID int
	// pdeathsig: setpriv takes --pdeathsig (uid sandboxes die with the server)
	pdeathsig bool
	// wsLink: /workspace is the workspace link (workspacelink_linux.go), so
	// insecure sandboxes' processes get their workspace at WorkspaceFD;
	// wsLinkWhy says why not.
	wsLink    bool
	wsLinkWhy string

	mu     sync.Mutex
	live   map[string]*sandbox
	closed bool
}

var _ Runtime = (*Linux)(nil)

// NewLinux checks that this host can isolate sandboxes and returns a runtime.
// When it cannot, the error says exactly what is missing, unless
// AllowInsecureNoIsolation is set.
func NewLinux(opts Options) (*Linux, error) {
	if opts.StateDir == "" {
		return nil, errors.New("runtime: StateDir is required")
	}
	sd, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, err
	}
	if opts.AgentPath == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("runtime: locate agent binary: %w", err)
		}
		opts.AgentPath = exe
	}
	if opts.AgentPath, err = filepath.Abs(opts.AgentPath); err != nil {
		return nil, err
	}
	if _, err := os.Stat(opts.AgentPath); err != nil {
		return nil, fmt.Errorf("runtime: agent binary: %w", err)
	}
	if opts.DiskLimitBytes == 0 {
		opts.DiskLimitBytes = DefaultDiskLimit
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 20 * time.Second
	}
	if err := os.MkdirAll(filepath.Join(sd, "sandboxes"), 0o700); err != nil {
		return nil, fmt.Errorf("runtime: state dir: %w", err)
	}
	l := &Linux{opts: opts, stateDir: sd, live: map[string]*sandbox{}, uids: map[int]bool{}, nextUID: os.Getpid() % SandboxUIDCount}
	var missing []string
	if opts.ForceInsecure {
		missing = append(missing, "insecure mode forced by configuration")
	} else {
		missing = l.probe()
	}
	if l.ip == "" {
		l.ip, _ = exec.LookPath("ip")
	}
	if _, err := os.Stat("/usr/bin/setpriv"); err == nil {
		l.setpriv = "/usr/bin/setpriv"
	}
	l.prlimit, _ = exec.LookPath("prlimit")
	l.cg = detectCgroups() // used by sandboxes only when secure; by Reap always
	if len(missing) == 0 {
		l.secure = true
		return l, nil
	}
	if !opts.AllowInsecureNoIsolation {
		return nil, fmt.Errorf("runtime: cannot isolate sandboxes on this host: %s (or start with --insecure-no-isolation to run sandboxes as plain processes)",
			strings.Join(missing, "; "))
	}
	l.reason = "isolation not enforced: " + strings.Join(missing, "; ")
	if l.asUID, l.uidWhy = l.uidMode(); l.asUID {
		l.reason += "; each sandbox runs as a uid of its own (no capabilities, no_new_privs, rlimits)"
	} else {
		l.reason += "; sandboxes run as the server's uid (" + l.uidWhy + ")"
	}
	link := opts.WorkspaceLink
	if link == "" && !opts.ForceInsecure {
		link = "/workspace"
	}
	if link == "" {
		l.wsLinkWhy = "no workspace link: insecure mode forced by configuration"
		l.reason += "; commands that name /workspace literally do not work"
	} else if err := ensureWorkspaceLink(link); err != nil {
		l.wsLinkWhy = err.Error()
		l.reason += "; commands that name /workspace literally do not work (" + l.wsLinkWhy + ")"
	} else {
		l.wsLink = true
		l.reason += "; /workspace is each sandbox's own workspace (a link through the descriptor its processes hold)"
	}
	return l, nil
}

// probe returns what prevents isolation on this host (empty = all good).
func (l *Linux) probe() []string {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, fmt.Sprintf("not running as root (euid %d): network namespaces and cgroups need root", os.Geteuid()))
	}
	var err error
	if l.bwrap, err = exec.LookPath("bwrap"); err != nil {
		missing = append(missing, "bubblewrap (bwrap) not found: apt-get install -y bubblewrap")
	}
	if l.nsenter, err = exec.LookPath("nsenter"); err != nil {
		missing = append(missing, "nsenter not found: apt-get install -y util-linux")
	}
	if l.ip, err = exec.LookPath("ip"); err != nil {
		missing = append(missing, "ip not found: apt-get install -y iproute2")
	}
	if _, err := exec.LookPath("sysctl"); err != nil {
		missing = append(missing, "sysctl not found: apt-get install -y procps")
	}
	if len(missing) > 0 {
		return missing
	}
	// A real, tiny sandbox: catches kernels or containers that forbid namespaces.
	out, err := exec.Command(l.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
		"--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "--cap-drop", "ALL",
		"--", "/usr/bin/true").CombinedOutput()
	if err != nil {
		missing = append(missing, fmt.Sprintf("bwrap cannot create namespaces here: %v: %s", err, strings.TrimSpace(string(out))))
	}
	name := fmt.Sprintf("osbprobe-%d", os.Getpid())
	if err := runIP(l.ip, "netns", "add", name); err != nil {
		missing = append(missing, fmt.Sprintf("cannot create network namespaces: %v", err))
	} else {
		_ = deleteNetns(l.ip, name)
	}
	return missing
}

// Isolation reports whether namespaces are enforced, and why not.
func (l *Linux) Isolation() (bool, string) {
	if l.secure {
		return true, ""
	}
	return false, l.reason
}

// Enforced lists which limits and isolation features are really applied.
func (l *Linux) Enforced() map[string]bool {
	sec := l.secure
	return map[string]bool{
		"filesystem":     sec,
		"network":        sec,
		"pid_namespace":  sec,
		"capabilities":   sec,
		"seccomp":        sec,
		"devices":        sec && l.cg.has("devices") && !l.cg.v2,
		"memory":         sec && l.cg.has("memory"),
		"pids":           sec && l.cg.has("pids"),
		"cpu":            sec && l.cg.has("cpu"),
		"disk":           sec && l.opts.DiskLimitBytes > 0,
		"pause":          true,
		"pause_freezer":  sec && l.cg.has("freezer"),
		"clean_env":      true,
		"own_uid":        !sec && l.asUID,
		"entrypoint_run": true,
	}
}

// DiskLimit is the enforced per-sandbox disk limit in bytes (0: none).
func (l *Linux) DiskLimit() int64 {
	if !l.secure || l.opts.DiskLimitBytes < 0 {
		return 0
	}
	return l.opts.DiskLimitBytes
}

// StateDir is the absolute state directory.
func (l *Linux) StateDir() string { return l.stateDir }

var idRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// Create starts a sandbox and returns once execd answers /ping.
func (l *Linux) Create(ctx context.Context, spec Spec) (Sandbox, error) {
	if !idRE.MatchString(spec.ID) {
		return nil, fmt.Errorf("runtime: invalid sandbox id %q", spec.ID)
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, errors.New("runtime: closed")
	}
	if _, dup := l.live[spec.ID]; dup {
		l.mu.Unlock()
		return nil, fmt.Errorf("runtime: sandbox %s already exists", spec.ID)
	}
	s := &sandbox{rt: l, id: spec.ID, dir: filepath.Join(l.stateDir, "sandboxes", spec.ID)}
	if !l.secure && l.asUID {
		uid, err := l.allocUID()
		if err != nil {
			l.mu.Unlock()
			return nil, err
		}
		s.uid = uid
	}
	l.live[spec.ID] = s
	l.mu.Unlock()

	// Destroy (a Close of the runtime, a delete) waits until start is done:
	// run alongside it, it found no namespace yet and removed the directory
	// start was filling, start then made the namespace, failed on the
	// missing directory and its own Destroy found the sandbox gone, so the
	// namespace was left with nothing to say whose it was (the osb-* netns
	// the CI leak check found).
	s.destroyM.Lock()
	err := s.start(ctx, spec)
	s.destroyM.Unlock()
	if err != nil {
		_ = s.Destroy()
		return nil, err
	}
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed { // its Close destroys it, or has
		_ = s.Destroy()
		return nil, errors.New("runtime: closed while the sandbox started")
	}
	return s, nil
}

func (l *Linux) forget(id string) {
	l.mu.Lock()
	if s := l.live[id]; s != nil && s.uid != 0 {
		delete(l.uids, s.uid)
	}
	delete(l.live, id)
	l.mu.Unlock()
}

// claimNetns picks the sandbox's namespace name: osb-<first 12 of id>, plus a
// hash of the whole id when a live sandbox of this runtime already uses that
// name (ids sharing their first 12 characters).
func (l *Linux) claimNetns(id string) string {
	name := netnsName(id)
	l.mu.Lock()
	defer l.mu.Unlock()
	for other, s := range l.live {
		if other != id && s.netns == name {
			sum := sha256.Sum256([]byte(id))
			return name + "-" + hex.EncodeToString(sum[:4])
		}
	}
	return name
}

// Close destroys every live sandbox.
func (l *Linux) Close() error {
	l.mu.Lock()
	l.closed = true
	var all []*sandbox
	for _, s := range l.live {
		all = append(all, s)
	}
	l.mu.Unlock()
	var errs []error
	for _, s := range all {
		errs = append(errs, s.Destroy())
	}
	return errors.Join(errs...)
}
