package confine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The confinement matrix (docs/confinement.md, "What a machine allows"):
// which of the mechanisms the levels are built on work where the grader
// runs. `acceptance confine-probe` prints it; .ci/confine-matrix.sh runs
// that in containers of the project's docker engine.

// MatrixRow is one mechanism: "works", or why not.
type MatrixRow struct {
	Name   string `json:"name"`
	Works  bool   `json:"works"`
	Detail string `json:"detail"`
}

// ProbeChildArg is the argument the probe re-executes itself with to try a
// mechanism inside fresh namespaces (ProbeChild handles it), after
// ProbeCommand.
const ProbeChildArg = "--probe-child"

// ProbeCommand is the self executable's subcommand that takes ProbeChildArg.
const ProbeCommand = "confine-probe"

// probeUID is the uid the matrix runs a process as (never a box's range).
const probeUID = 60999

// Matrix measures the mechanisms on this machine. self is the executable
// that handles ProbeChildArg (ProbeChild).
func Matrix(self string) []MatrixRow {
	var rows []MatrixRow
	add := func(name string, err error, ok string) {
		r := MatrixRow{Name: name, Works: err == nil, Detail: ok}
		if err != nil {
			r.Detail = err.Error()
		}
		rows = append(rows, r)
	}
	info := func(name, v string) { rows = append(rows, MatrixRow{Name: name, Works: true, Detail: v}) }
	info("uid", strconv.Itoa(os.Geteuid()))
	eff, _ := effectiveCaps()
	info("effective capabilities (CapEff)", fmt.Sprintf("%016x", eff))
	info("seccomp (0 none, 2 filter)", statusField("Seccomp"))
	info("no_new_privs already set", statusField("NoNewPrivs"))
	info("cgroup filesystem", cgroupFS())

	child := func(flags uintptr, what string, cred *syscall.Credential, userns bool) error {
		cmd := exec.Command(self, ProbeCommand, ProbeChildArg, what)
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags, Credential: cred}
		if userns {
			cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
			cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			if s, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n"); s != "" {
				return fmt.Errorf("%v: %s", err, s)
			}
			return err
		}
		return nil
	}
	add("user namespace (clone CLONE_NEWUSER)", child(unix.CLONE_NEWUSER, "true", nil, true), "works")
	add("user + mount namespace, tmpfs mounted inside (bwrap's unprivileged mode)", child(unix.CLONE_NEWUSER|unix.CLONE_NEWNS, "mount", nil, true), "works")
	add("mount namespace, tmpfs mounted inside (as root)", child(unix.CLONE_NEWNS, "mount", nil, false), "works")
	add("PID namespace", child(unix.CLONE_NEWPID, "true", nil, false), "works")
	add("network namespace", child(unix.CLONE_NEWNET, "true", nil, false), "works")
	add("IPC + UTS namespaces", child(unix.CLONE_NEWIPC|unix.CLONE_NEWUTS, "true", nil, false), "works")
	add("cgroup namespace", child(unix.CLONE_NEWCGROUP, "true", nil, false), "works")
	add("bwrap (setuid-less, as this uid), namespaces", bwrapTry(false), "works")
	add("bwrap --unshare-user", bwrapTry(true), "works")
	add("cgroup: make a group (write access)", cgroupWrite(), "works")
	add("cgroup v2: delegate controllers (cgroup.subtree_control)", cgroupDelegate(), "works")
	add("CAP_NET_ADMIN (iptables in a namespace)", capBit(eff, 12, "CAP_NET_ADMIN"), "present")
	add("CAP_SYS_ADMIN (mounts, namespaces)", capBit(eff, 21, "CAP_SYS_ADMIN"), "present")
	cred := &syscall.Credential{Uid: probeUID, Gid: probeUID, Groups: []uint32{}}
	setuidErr := child(0, "true", cred, false)
	add("run a process as another uid (setuid, CAP_SETUID/SETGID)", setuidErr, "works")
	add("kill a process of another uid (CAP_KILL)", killOther(self, setuidErr), "works")
	add("rlimits lowered on a child (prlimit: nproc, nofile, fsize, as, cpu)", rlimitChild(self), "works")
	add("prctl PR_SET_NO_NEW_PRIVS", child(0, "nnp", nil, false), "works")
	add("prctl PR_SET_DUMPABLE 0 (the grader non-dumpable)", child(0, "dumpable", nil, false), "works")
	add("prctl PR_SET_PDEATHSIG", child(0, "pdeathsig", nil, false), "works")
	add("setpriv --bounding-set -all --no-new-privs (CAP_SETPCAP)", setprivTry(), "works")
	full := Probe(Config{})
	add("level full: a box opened, run and closed", errIf(full), "works")
	uid := ProbeUID(Config{})
	add("level uid: a uid box opened, run and closed", errIf(uid), "works")
	l, why, _ := Choose(Config{}, "")
	info("level chosen (auto)", string(l)+sep(why))
	return rows
}

func sep(why string) string {
	if why == "" {
		return ""
	}
	return " (" + why + ")"
}

func errIf(why string) error {
	if why == "" {
		return nil
	}
	return errors.New(why)
}

func statusField(name string) string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return "?"
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func cgroupFS() string {
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err != nil {
		return "none: " + err.Error()
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		return "v2 (unified)"
	}
	ro := ""
	if err := unix.Access("/sys/fs/cgroup/pids", unix.W_OK); err != nil {
		ro = ", controllers read-only"
	}
	return "v1" + ro
}

func cgroupWrite() error {
	v2, ctrls := detectControllers()
	if len(ctrls) == 0 {
		return errors.New("no cgroup controller is mounted")
	}
	dir := filepath.Join(cgroupRoot, fmt.Sprintf("acc-probe-%d", os.Getpid()))
	if !v2 {
		for _, c := range []string{"pids", "memory"} {
			if p, ok := ctrls[c]; ok {
				dir = filepath.Join(p, fmt.Sprintf("acc-probe-%d", os.Getpid()))
				break
			}
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	return os.Remove(dir)
}

func cgroupDelegate() error {
	var st unix.Statfs_t
	if err := unix.Statfs(cgroupRoot, &st); err != nil {
		return err
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		return errors.New("not cgroup v2 (v1 has no delegation file)")
	}
	dir := filepath.Join(cgroupRoot, fmt.Sprintf("acc-probe-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer os.Remove(dir)
	return os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+pids"), 0o644)
}

func capBit(eff uint64, bit uint, name string) error {
	if eff&(1<<bit) == 0 {
		return errors.New(name + " is not in the effective set")
	}
	return nil
}

func bwrapTry(userns bool) error {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		return errors.New("bwrap is not installed")
	}
	a := []string{"--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--proc", "/proc", "true"}
	if userns {
		a = append([]string{"--unshare-user"}, a...)
	}
	out, err := exec.Command(bw, a...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func setprivTry() error {
	sp, err := exec.LookPath("setpriv")
	if err != nil {
		return errors.New("setpriv is not installed")
	}
	out, err := exec.Command(sp, "--inh-caps", "-all", "--bounding-set", "-all", "--no-new-privs", "--", "true").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

func killOther(self string, setuidErr error) error {
	if setuidErr != nil {
		return errors.New("not tried: no process can run as another uid here")
	}
	cmd := exec.Command(self, ProbeCommand, ProbeChildArg, "sleep")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: probeUID, Gid: probeUID, Groups: []uint32{}}}
	if err := cmd.Start(); err != nil {
		return err
	}
	err := cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	return err
}

func rlimitChild(self string) error {
	cmd := exec.Command(self, ProbeCommand, ProbeChildArg, "sleep")
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	for _, r := range []int{unix.RLIMIT_NPROC, unix.RLIMIT_NOFILE, unix.RLIMIT_FSIZE, unix.RLIMIT_AS, unix.RLIMIT_CPU} {
		lim := unix.Rlimit{Cur: 1 << 20, Max: 1 << 20}
		if r == unix.RLIMIT_NPROC || r == unix.RLIMIT_NOFILE || r == unix.RLIMIT_CPU {
			lim = unix.Rlimit{Cur: 64, Max: 64}
		}
		if r == unix.RLIMIT_AS {
			lim = unix.Rlimit{Cur: 1 << 32, Max: 1 << 32}
		}
		if err := unix.Prlimit(cmd.Process.Pid, r, &lim, nil); err != nil {
			return fmt.Errorf("prlimit %d: %w", r, err)
		}
	}
	return nil
}

// ProbeChild is the child side of Matrix (argv after ProbeChildArg): it
// exits 0 when the mechanism worked.
func ProbeChild(what string) int {
	var err error
	switch what {
	case "true":
	case "sleep":
		time.Sleep(30 * time.Second)
	case "mount":
		dir, derr := os.MkdirTemp("", "acc-probe-mnt-")
		if derr != nil {
			err = derr
			break
		}
		defer os.Remove(dir)
		if err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err == nil {
			err = unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m")
		}
	case "nnp":
		err = unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
	case "dumpable":
		if err = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err == nil {
			if v, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); v != 0 {
				err = errors.New("still dumpable")
			}
		}
	case "pdeathsig":
		err = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	default:
		err = fmt.Errorf("unknown probe %q", what)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// MatrixMarkdown is the matrix as table rows "| name | works/fails: detail |".
func MatrixMarkdown(rows []MatrixRow) string {
	var b strings.Builder
	for _, r := range rows {
		v := r.Detail
		if !r.Works {
			v = "**no**: " + v
		}
		fmt.Fprintf(&b, "| %s | %s |\n", r.Name, strings.ReplaceAll(v, "|", "\\|"))
	}
	return b.String()
}
