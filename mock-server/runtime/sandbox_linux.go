//go:build linux

package runtime

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// procReadOnly and procMasked follow Docker's defaults for /proc.
var (
	procReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs"}
	procMasked   = []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats", "/proc/timer_stats"}
)

// diskInodes bounds the number of files in a sandbox's tmpfs (one per 4 kB
// of the limit, at least 16384).
func diskInodes(limit int64) int64 { return max(limit/4096, 16384) }

// unmountDir detaches a sandbox's tmpfs; a directory that is not a mount point is fine.
func unmountDir(dir string) error {
	err := unix.Unmount(dir, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	// Without CAP_SYS_ADMIN (insecure mode in an unprivileged container, e.g. a
	// Gradescope autograder) umount answers EPERM even where nothing is mounted:
	// a directory on its parent's filesystem was never mounted here.
	if errors.Is(err, unix.EPERM) && !onOwnFilesystem(dir) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}

// onOwnFilesystem: dir is on another filesystem than its parent (a mount
// point). A dir that is gone is not; one that cannot be told counts as one.
func onOwnFilesystem(dir string) bool {
	var st, pst unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return !errors.Is(err, unix.ENOENT)
	}
	if unix.Stat(filepath.Dir(dir), &pst) != nil {
		return true
	}
	return st.Dev != pst.Dev
}

// meta is written to <dir>/meta.json so Reap can find what a killed server left.
type meta struct {
	ID      string    `json:"id"`
	Netns   string    `json:"netns,omitempty"`
	Secure  bool      `json:"secure"`
	Created time.Time `json:"created"`
	Group   string    `json:"group,omitempty"` // Spec.Group: its cgroups' parent group
	UID     int       `json:"uid,omitempty"`   // insecure mode as root: the sandbox's own uid
}

type sandbox struct {
	rt  *Linux
	id  string
	dir string
	uid int // insecure mode as root: the uid every process of the sandbox runs as (uid_linux.go)

	netns    string
	cg       *sandboxCgroup
	sockPath string
	dirFile  *os.File // keeps /proc/self/fd/N/execd.sock valid for long paths
	cmd      *exec.Cmd
	evR      *os.File
	waitDone chan struct{}
	waitErr  error
	client   *http.Client

	mu       sync.Mutex
	paused   bool
	stopped  []int // SIGSTOPped pids (no freezer)
	entry    *AgentEvent
	since    time.Time
	gone     bool
	ownsDir  bool         // false when start found the directory already there
	mounted  bool         // s.dir is a tmpfs (the disk limit)
	volumes  []heldVolume // writable volumes, held open for the scans until Destroy
	destroyM sync.Mutex
}

func (s *sandbox) ID() string  { return s.id }
func (s *sandbox) Dir() string { return s.dir }

// DialExecd connects to the agent's execd listener.
func (s *sandbox) DialExecd(ctx context.Context) (net.Conn, error) {
	s.mu.Lock()
	gone := s.gone
	s.mu.Unlock()
	if gone || s.sockPath == "" {
		return nil, fmt.Errorf("sandbox %s: execd not available", s.id)
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", s.sockPath)
}

func (s *sandbox) start(ctx context.Context, spec Spec) error {
	rt := s.rt
	secure := rt.secure
	ws := filepath.Join(s.dir, "workspace")
	tmp := filepath.Join(s.dir, "tmp")
	home := filepath.Join(s.dir, "home")
	varDir := filepath.Join(s.dir, "var")
	shm := filepath.Join(s.dir, "shm")
	if _, err := os.Stat(s.dir); err == nil {
		return fmt.Errorf("runtime: sandbox directory %s already exists (a leftover? call Reap)", s.dir)
	}
	if err := os.Mkdir(s.dir, 0o700); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	s.ownsDir = true
	if secure && rt.opts.DiskLimitBytes > 0 {
		// The whole sandbox directory is a size-limited tmpfs: a sandbox cannot
		// write more than the limit (ENOSPC; uploads answer 507).
		opt := fmt.Sprintf("size=%d,nr_inodes=%d,mode=0700", rt.opts.DiskLimitBytes, diskInodes(rt.opts.DiskLimitBytes))
		if err := unix.Mount("osb-"+s.id, s.dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opt); err != nil {
			return fmt.Errorf("runtime: disk limit (tmpfs on %s): %w", s.dir, err)
		}
		s.mounted = true
	}
	for _, d := range []struct {
		p    string
		mode os.FileMode
	}{{s.dir, 0o700}, {ws, 0o755}, {tmp, 0o777 | os.ModeSticky}, {home, 0o700}, {varDir, 0o755}, {shm, 0o777 | os.ModeSticky}} {
		if err := os.MkdirAll(d.p, 0o700); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		if err := os.Chmod(d.p, d.mode); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	}
	if err := makeVarSkeleton(varDir); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if err := copySeed(s.dir, spec.Seed); err != nil {
		return fmt.Errorf("runtime: restore: %w", err)
	}
	if s.uid != 0 {
		// Its own places are its uid's; the sandbox directory stays root's,
		// group the sandbox's gid, 0750: no other uid gets in (meta.json,
		// agent.log, execd.sock are root's 0600).
		if err := os.Chown(s.dir, 0, s.uid); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		if err := os.Chmod(s.dir, 0o750); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		for _, d := range []string{ws, tmp, home, varDir, shm} {
			if err := chownTree(d, s.uid); err != nil {
				return fmt.Errorf("runtime: %w", err)
			}
		}
	}
	if secure {
		if err := makeDevNodes(filepath.Join(s.dir, "dev")); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	}
	m := meta{ID: s.id, Secure: secure, Created: time.Now().UTC(), Group: spec.Group, UID: s.uid}
	if secure {
		s.netns = rt.claimNetns(s.id)
		m.Netns = s.netns
	}
	if b, err := json.Marshal(m); err == nil {
		if err := os.WriteFile(filepath.Join(s.dir, "meta.json"), b, 0o600); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	}
	sandboxHome, sandboxRoot := "/root", "/"
	if !secure {
		sandboxHome, sandboxRoot = home, s.dir
	}
	env, err := buildEnv(spec, sandboxHome, secure, tmp)
	if err != nil {
		return err
	}
	for p, host := range spec.ExtraFiles {
		if !filepath.IsAbs(p) || strings.ContainsRune(p, 0) {
			return fmt.Errorf("runtime: extra file path %q must be absolute", p)
		}
		if _, err := os.Stat(host); err != nil {
			return fmt.Errorf("runtime: extra file %s: %w", p, err)
		}
	}
	if len(spec.Mounts) > 0 && !secure {
		return errors.New("runtime: volumes need the isolating runtime")
	}
	for _, m := range spec.Mounts {
		if !filepath.IsAbs(m.Host) || !filepath.IsAbs(m.Path) {
			return fmt.Errorf("runtime: volume %s → %s: paths must be absolute", m.Host, m.Path)
		}
	}
	if err := s.holdVolumes(spec.Mounts); err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if spec.GatewaySocket != "" {
		if _, err := os.Stat(spec.GatewaySocket); err != nil {
			return fmt.Errorf("runtime: gateway socket: %w", err)
		}
	}
	etc, err := writeEtc(filepath.Join(s.dir, "etc"), sandboxHome)
	if err != nil {
		return fmt.Errorf("runtime: %w", err)
	}
	if secure && spec.Profile.Name == "python" {
		if err := writeLocalBin(filepath.Join(s.dir, "localbin")); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
	}

	if secure {
		if err := createNetns(rt.ip, s.netns); err != nil {
			return fmt.Errorf("runtime: network namespace: %w", err)
		}
		if rt.cg != nil {
			if s.cg, err = rt.cg.createIn(spec.Group, spec.GroupLimits, s.id, spec.Limits); err != nil {
				return fmt.Errorf("runtime: %w", err)
			}
		}
	}

	// The execd listener lives on the host; the agent inherits it as fd 3.
	sock := filepath.Join(s.dir, "execd.sock")
	if len(sock) > 100 { // sun_path is 108 bytes; go through a directory fd
		if s.dirFile, err = os.Open(s.dir); err != nil {
			return fmt.Errorf("runtime: %w", err)
		}
		sock = fmt.Sprintf("/proc/self/fd/%d/execd.sock", s.dirFile.Fd())
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fmt.Errorf("runtime: execd listener: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	lnFile, err := ln.File()
	_ = ln.Close()
	if err != nil {
		return fmt.Errorf("runtime: execd listener: %w", err)
	}
	defer lnFile.Close()
	_ = os.Chmod(filepath.Join(s.dir, "execd.sock"), 0o600)
	s.sockPath = sock
	s.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return s.DialExecd(ctx) },
	}}

	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer cfgR.Close()
	defer cfgW.Close()
	evR, evW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer evW.Close()
	s.evR = evR
	logf, err := os.OpenFile(filepath.Join(s.dir, "agent.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()

	if secure {
		argv := []string{rt.nsenter, "--net=" + filepath.Join(netnsDir, s.netns), "--", rt.bwrap}
		argv = append(argv, s.bwrapArgs(spec, env, etc, ws, tmp, home)...)
		if s.cg != nil {
			// A wrapper puts itself into the cgroups, then execs nsenter → bwrap,
			// so every sandbox process is accounted for from its first instruction.
			script := `while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"`
			pre := append([]string{"/bin/sh", "-c", script, "osb-cgexec"}, s.cg.ProcsFiles()...)
			argv = append(append(pre, "--"), argv...)
		}
		s.cmd = exec.Command(argv[0], argv[1:]...)
		s.cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		// bwrap's pid 1 inside the sandbox keeps this environment (and /bin/sh
		// adds PWD): start in / so no host directory shows in /proc/1/environ.
		s.cmd.Dir = "/"
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	} else {
		argv := []string{rt.opts.AgentPath, AgentArg}
		if s.uid != 0 {
			argv = limitArgv(rt.prlimit, rt.opts.DiskLimitBytes, uidArgv(rt.setpriv, rt.pdeathsig, s.uid, argv))
		}
		s.cmd = exec.Command(argv[0], argv[1:]...)
		s.cmd.Env = envList(env)
		s.cmd.Dir = ws
		s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	}
	s.cmd.ExtraFiles = []*os.File{lnFile, cfgR, evW}
	if secure {
		sf, err := seccompFile()
		if err != nil {
			return fmt.Errorf("runtime: seccomp filter: %w", err)
		}
		defer sf.Close()
		s.cmd.ExtraFiles = append(s.cmd.ExtraFiles, sf) // agentFDSeccomp, read (and closed) by bwrap
		for _, m := range spec.Mounts {
			if m.File != nil {
				s.cmd.ExtraFiles = append(s.cmd.ExtraFiles, m.File) // --bind-fd, closed by bwrap
			}
		}
	}
	s.cmd.Stdout = logf
	s.cmd.Stderr = logf
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return fmt.Errorf("runtime: start sandbox: %w", err)
	}
	s.waitDone = make(chan struct{})
	s.since = time.Now().UTC()
	go func() {
		err := s.cmd.Wait()
		s.mu.Lock()
		s.waitErr = err
		if !s.gone {
			s.since = time.Now().UTC()
		}
		s.mu.Unlock()
		close(s.waitDone)
	}()
	go s.readEvents(evR)

	cfg := AgentConfig{
		ID:               s.id,
		Entrypoint:       spec.Entrypoint,
		Env:              env,
		Root:             sandboxRoot,
		Workspace:        "/workspace",
		MemoryLimitBytes: spec.Limits.MemoryBytes,
		CloseDelay:       rt.opts.CommandCloseDelay,
		CodeContexts:     spec.Profile.CodeInterpreter,
	}
	if !secure && rt.wsLink {
		cfg.WorkspaceFD = WorkspaceFD
	}
	if spec.GatewaySocket != "" {
		cfg.GatewaySocket = "/run/osb/gateway.sock"
		if !secure {
			cfg.GatewaySocket = spec.GatewaySocket
		}
	}
	b, _ := json.Marshal(cfg)
	if _, err := cfgW.Write(b); err != nil {
		return fmt.Errorf("runtime: send agent config: %w (agent log: %s)", err, s.logTail())
	}
	_ = cfgW.Close()
	return s.waitReady(ctx)
}

func (s *sandbox) bwrapArgs(spec Spec, env map[string]string, etc map[string]string, ws, tmp, home string) []string {
	a := []string{
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--hostname", "sandbox", "--die-with-parent",
		"--ro-bind", "/usr", "/usr",
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin", "lib32", "libx32"} {
		if _, err := os.Stat("/usr/" + l); err == nil {
			a = append(a, "--symlink", "usr/"+l, "/"+l)
		}
	}
	for _, p := range hostEtcFiles {
		a = append(a, "--ro-bind-try", p, p)
	}
	if spec.Profile.Name == "python" {
		a = append(a, "--ro-bind", filepath.Join(s.dir, "localbin"), "/usr/local/bin")
	}
	names := make([]string, 0, len(etc))
	for p := range etc {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		a = append(a, "--ro-bind", etc[p], p)
	}
	a = append(a, "--proc", "/proc")
	// Host-wide kernel settings stay out of reach, as in a Docker container:
	// /proc/sys (core_pattern, drop_caches, … are writable by uid 0 without
	// any capability), sysrq-trigger, irq, bus and fs read-only; kcore, keys,
	// timer and scheduler debug files masked.
	for _, p := range procReadOnly {
		if _, err := os.Stat(p); err == nil {
			a = append(a, "--ro-bind", p, p)
		}
	}
	for _, p := range procMasked {
		if _, err := os.Stat(p); err == nil {
			a = append(a, "--ro-bind", "/dev/null", p)
		}
	}
	a = append(a, "--dev", "/dev")
	// bwrap's /dev binds the host's own device nodes: root with CAP_FOWNER
	// could chmod or chown the host's /dev/null. Each sandbox gets its own
	// nodes instead (makeDevNodes), bound over them.
	for _, d := range devNodes {
		a = append(a, "--dev-bind", filepath.Join(s.dir, "dev", d.name), "/dev/"+d.name)
	}
	// /dev/shm (1777, as Docker's) is on the sandbox's own disk-limited
	// storage, where the scans see it; the rest of /dev is read-only (below),
	// so nothing else there can hold a file.
	a = append(a, "--bind", filepath.Join(s.dir, "shm"), "/dev/shm")
	a = append(a,
		"--bind", ws, "/workspace", "--bind", tmp, "/tmp", "--bind", home, "/root",
		"--bind", filepath.Join(s.dir, "var"), "/var",
		"--ro-bind", s.rt.opts.AgentPath, "/.osb/agent")
	if spec.GatewaySocket != "" {
		a = append(a, "--ro-bind", spec.GatewaySocket, "/run/osb/gateway.sock")
	}
	extra := make([]string, 0, len(spec.ExtraFiles))
	for p := range spec.ExtraFiles {
		extra = append(extra, p)
	}
	sort.Strings(extra)
	for _, p := range extra {
		a = append(a, "--ro-bind", spec.ExtraFiles[p], p)
	}
	for i, m := range spec.Mounts {
		op, src := "--bind", m.Host
		if m.File != nil {
			// inherited right after the seccomp descriptor (start), closed by bwrap once bound
			op, src = "--bind-fd", strconv.Itoa(agentFDSeccomp+1+mountFileIndex(spec.Mounts, i))
		}
		if m.ReadOnly {
			op = strings.Replace(op, "--bind", "--ro-bind", 1)
		}
		a = append(a, op, src, m.Path)
	}
	a = append(a, "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", "/workspace", "--clearenv")
	// Only the non-secret basics go on the (host-visible) command line; the
	// full environment reaches the agent through the config pipe.
	for _, k := range []string{"PATH", "HOME", "LANG"} {
		a = append(a, "--setenv", k, env[k])
	}
	// Root in the sandbox has Docker's default capability set (bwrap also
	// drops everything else from the bounding set); CAP_MKNOD only where the
	// devices cgroup stops it from opening a real device.
	a = append(a, "--cap-drop", "ALL")
	for _, c := range dockerCaps {
		if c == "CAP_MKNOD" && (s.cg == nil || !s.cg.hasDevices()) {
			continue
		}
		a = append(a, "--cap-add", c)
	}
	a = append(a, "--seccomp", strconv.Itoa(agentFDSeccomp), "--new-session", "--")
	if s.rt.setpriv != "" {
		// bwrap leaves the bounding set full (no_new_privs makes it grant
		// nothing); narrow it to the same set, as Docker does, before the agent
		// (a Go program: the bounding set is per thread) starts.
		var lower []string
		for _, c := range dockerCaps {
			if c != "CAP_MKNOD" || slices.Contains(a, c) {
				lower = append(lower, strings.ToLower(strings.TrimPrefix(c, "CAP_")))
			}
		}
		a = append(a, s.rt.setpriv, "--bounding-set", "-all,+"+strings.Join(lower, ",+"), "--")
	}
	a = append(a, "/.osb/agent", AgentArg)
	return a
}

// mountFileIndex is the position of mounts[i] among the mounts that carry a File.
func mountFileIndex(mounts []Mount, i int) int {
	n := 0
	for _, m := range mounts[:i] {
		if m.File != nil {
			n++
		}
	}
	return n
}

// varSkeleton is the sandbox's own writable /var (a Docker container's /var
// is a private copy-on-write layer): the directories a Debian image has, on
// the sandbox's disk-limited storage. The host's /var is never visible.
var varSkeleton = []struct {
	name string
	mode os.FileMode
}{
	{"backups", 0o755}, {"cache", 0o755}, {"lib", 0o755}, {"local", 0o755}, {"log", 0o755},
	{"mail", 0o755}, {"opt", 0o755}, {"spool", 0o755}, {"tmp", 0o777 | os.ModeSticky},
}

func makeVarSkeleton(dir string) error {
	for _, d := range varSkeleton {
		p := filepath.Join(dir, d.name)
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(p, d.mode); err != nil {
			return err
		}
	}
	return nil
}

// buildEnv is the sandbox environment: a minimal base, the image profile's
// ENV, then the request's env. Nothing comes from the host.
func buildEnv(spec Spec, home string, secure bool, tmp string) (map[string]string, error) {
	env := map[string]string{
		"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME": home,
		"LANG": "C.UTF-8",
	}
	if !secure {
		env["TMPDIR"] = tmp
	}
	for k, v := range spec.Profile.Env {
		env[k] = v
	}
	for k, v := range spec.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("runtime: invalid environment variable %q", k)
		}
		env[k] = v
	}
	return env, nil
}

func envList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func (s *sandbox) readEvents(r *os.File) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var ev AgentEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		if ev.Kind == "entrypoint_exit" {
			s.mu.Lock()
			e := ev
			s.entry = &e
			if ev.Time.IsZero() {
				e.Time = time.Now().UTC()
			}
			s.since = e.Time
			s.mu.Unlock()
		}
	}
}

// ContainerLog is agent.log: the agent's own log and its entrypoint's
// output, stamped and bounded by the agent (agent.ContainerLogLimit).
func (s *sandbox) ContainerLog() ([]byte, error) {
	return os.ReadFile(filepath.Join(s.dir, "agent.log"))
}

func (s *sandbox) logTail() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "agent.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

func (s *sandbox) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.rt.opts.ReadyTimeout)
	defer cancel()
	for {
		select {
		case <-s.waitDone:
			return fmt.Errorf("runtime: sandbox agent exited before execd was ready (%v); agent log: %s", s.waitErr, s.logTail())
		default:
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(pctx, http.MethodGet, "http://execd/ping", nil)
		resp, err := s.client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				pcancel()
				return nil
			}
		}
		pcancel()
		select {
		case <-ctx.Done():
			return fmt.Errorf("runtime: execd not ready: %w (last error: %v); agent log: %s", ctx.Err(), err, s.logTail())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// State maps the entrypoint's fate to CONTRACT §1.6.
func (s *sandbox) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	agentDead := false
	if s.waitDone != nil {
		select {
		case <-s.waitDone:
			agentDead = true
		default:
		}
	}
	switch {
	case s.gone:
		return State{State: "Terminated", Reason: "CONTAINER_EXITED", Message: "sandbox destroyed", Since: s.since}
	case s.paused:
		return State{State: "Paused", Reason: "CONTAINER_PAUSED", Since: s.since}
	case s.entry != nil && s.entry.ExitCode == 0 && s.entry.Error == "":
		return State{State: "Terminated", Reason: "CONTAINER_EXITED", Message: "entrypoint exited with code 0", Since: s.since}
	case s.entry != nil:
		msg := fmt.Sprintf("entrypoint exited with code %d", s.entry.ExitCode)
		if s.entry.Error != "" {
			msg = "entrypoint failed: " + s.entry.Error
		}
		code := s.entry.ExitCode
		if code == 0 {
			code = 127
		}
		return State{State: "Failed", Reason: "CONTAINER_EXITED_ERROR", Message: msg, ExitCode: code, Since: s.since}
	case agentDead:
		return State{State: "Failed", Reason: "CONTAINER_EXITED_ERROR", Message: fmt.Sprintf("sandbox agent exited: %v", s.waitErr), ExitCode: -1, Since: s.since}
	}
	return State{State: "Running", Reason: "CONTAINER_RUNNING", Since: s.since}
}

func (s *sandbox) exited() bool {
	if s.entry != nil {
		return true
	}
	if s.waitDone != nil {
		select {
		case <-s.waitDone:
			return true
		default:
		}
	}
	return false
}

// Pause freezes every process (cgroup freezer; else SIGSTOP of every pid).
func (s *sandbox) Pause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return ErrNotRunning
	}
	if s.paused {
		return ErrAlreadyPaused
	}
	if s.exited() {
		return ErrNotRunning
	}
	if s.cg != nil && s.cg.canFreeze() {
		if err := s.cg.Freeze(); err != nil {
			_ = s.cg.Thaw()
			return fmt.Errorf("pause: %w", err)
		}
	} else {
		// Stop from the leaves up is not needed: SIGSTOP cannot be caught.
		s.stopped = s.pidsLocked()
		killPids(s.stopped, syscall.SIGSTOP)
	}
	s.paused = true
	s.since = time.Now().UTC()
	return nil
}

// Resume thaws what Pause froze.
func (s *sandbox) Resume() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return ErrNotRunning
	}
	if !s.paused {
		return ErrNotPaused
	}
	if s.cg != nil && s.cg.canFreeze() {
		if err := s.cg.Thaw(); err != nil {
			return fmt.Errorf("resume: %w", err)
		}
	} else {
		killPids(s.stopped, syscall.SIGCONT)
		s.stopped = nil
	}
	s.paused = false
	s.since = time.Now().UTC()
	return nil
}

// Pids lists host pids of the sandbox (cgroup members, else the process tree).
func (s *sandbox) Pids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pidsLocked()
}

func (s *sandbox) pidsLocked() []int {
	if s.cg != nil {
		return s.cg.Pids()
	}
	if s.uid != 0 { // every process of its uid, however it left the agent's tree
		return pidsOfUID(s.uid)
	}
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	select {
	case <-s.waitDone:
		return nil
	default:
	}
	return descendants(s.cmd.Process.Pid)
}

// Destroy kills every process, removes the netns, cgroups and directories.
func (s *sandbox) Destroy() error {
	s.destroyM.Lock()
	defer s.destroyM.Unlock()
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return nil
	}
	s.gone = true
	s.mu.Unlock()

	var errs []error
	if s.cg != nil {
		if err := s.cg.killAll(5 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if s.cmd != nil && s.cmd.Process != nil {
		pid := s.cmd.Process.Pid
		tree := descendants(pid)
		if !s.rt.secure {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		killPids(tree, syscall.SIGKILL)
		_ = s.cmd.Process.Kill()
		if s.uid != 0 {
			if err := killUID(s.rt.setpriv, s.uid, 5*time.Second); err != nil {
				errs = append(errs, err)
			}
		}
		select {
		case <-s.waitDone:
		case <-time.After(5 * time.Second):
			errs = append(errs, fmt.Errorf("sandbox %s: process %d did not exit", s.id, pid))
		}
	}
	// Anything else still holding the sandbox's directory (escaped insecure-mode
	// children, a half-started wrapper).
	if s.ownsDir {
		killPids(processesReferencing(s.dir), syscall.SIGKILL)
	}
	if s.cg != nil {
		if err := s.cg.remove(); err != nil {
			errs = append(errs, err)
		}
	}
	keepRecord := false
	if s.netns != "" {
		if err := deleteNetns(s.rt.ip, s.netns); err != nil {
			errs = append(errs, err)
			keepRecord = true
		}
	}
	if s.client != nil {
		s.client.CloseIdleConnections()
	}
	if s.dirFile != nil {
		_ = s.dirFile.Close()
	}
	s.mu.Lock()
	for _, v := range s.volumes {
		_ = v.f.Close()
	}
	s.volumes = nil
	s.mu.Unlock()
	if err := unmountDir(filepath.Join(s.dir, "dev")); err != nil {
		errs = append(errs, err)
	}
	if s.mounted && !keepRecord { // the record is in the tmpfs
		if err := unmountDir(s.dir); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case s.ownsDir && keepRecord:
		// The namespace outlived its removal: its record (meta.json) stays,
		// so the next Reap of this state dir removes it (never a namespace
		// no one knows is a sandbox's).
		errs = append(errs, fmt.Errorf("sandbox %s: directory %s kept for Reap", s.id, s.dir))
	case s.ownsDir:
		if err := os.RemoveAll(s.dir); err != nil {
			errs = append(errs, err)
		}
	}
	s.rt.forget(s.id)
	if len(errs) > 0 {
		return fmt.Errorf("destroy %s: %w", s.id, errors.Join(errs...))
	}
	return nil
}

// Quiesce kills every process of the sandbox (its agent too) and waits until
// none is left, so nothing in the sandbox can change its files any more. The
// directories, namespace and cgroups stay until Destroy. The final scan runs
// after it. Bounded by timeout.
func (s *sandbox) Quiesce(timeout time.Duration) error {
	s.mu.Lock()
	gone := s.gone
	s.mu.Unlock()
	if gone {
		return nil
	}
	var errs []error
	if s.cg != nil {
		if err := s.cg.killAll(timeout); err != nil {
			errs = append(errs, err)
		}
	}
	if s.cmd != nil && s.cmd.Process != nil {
		pid := s.cmd.Process.Pid
		if !s.rt.secure {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
		killPids(descendants(pid), syscall.SIGKILL)
		_ = s.cmd.Process.Kill()
		if s.uid != 0 {
			if err := killUID(s.rt.setpriv, s.uid, timeout); err != nil {
				errs = append(errs, err)
			}
		}
		select {
		case <-s.waitDone:
		case <-time.After(timeout):
			errs = append(errs, fmt.Errorf("sandbox %s: process %d did not exit", s.id, pid))
		}
	}
	return errors.Join(errs...)
}

// heldVolume is a writable volume's descriptor (O_PATH), kept so the canary
// scan and the final manifest walk what was mounted, never a path again.
type heldVolume struct {
	path string // in-sandbox mount path
	f    *os.File
}

// holdVolumes keeps a descriptor of every writable mount: a duplicate of the
// one the mount is made from (the caller closes its own), or, for a mount
// given by path only, the path opened without following a final link.
func (s *sandbox) holdVolumes(mounts []Mount) error {
	for _, m := range mounts {
		if m.ReadOnly {
			continue
		}
		var fd int
		var err error
		if m.File != nil {
			fd, err = unix.FcntlInt(m.File.Fd(), unix.F_DUPFD_CLOEXEC, 0)
		} else {
			fd, err = unix.Open(m.Host, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		}
		if err != nil {
			return fmt.Errorf("volume %s: %w", m.Path, err)
		}
		s.mu.Lock()
		s.volumes = append(s.volumes, heldVolume{path: m.Path, f: os.NewFile(uintptr(fd), m.Host)})
		s.mu.Unlock()
	}
	return nil
}

// Writable lists every place the sandbox can write: /workspace, /tmp, /root,
// its private /var and /dev/shm (all under its directory), then each writable
// volume through the descriptor held since it was mounted.
func (s *sandbox) Writable() []WritableDir {
	out := dirWritable(s.dir)
	s.mu.Lock()
	vols := slices.Clone(s.volumes)
	s.mu.Unlock()
	for _, v := range vols {
		f := v.f
		out = append(out, WritableDir{Path: v.path, Volume: true, walk: func(maxEntries int, deadline time.Time, fn func(WalkEntry)) (WalkResult, error) {
			return WalkOpen(f, maxEntries, deadline, fn)
		}})
	}
	return out
}
