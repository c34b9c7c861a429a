package confine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The uid level (LevelUID): what a grader that is root without
// CAP_SYS_ADMIN (an unprivileged container, Docker's default capabilities)
// can still do. Each command runs as a uid of its own (the same locks as the
// full box), with no capabilities and no_new_privs (setpriv), and rlimits
// on processes (RLIMIT_NPROC counts the uid's processes, so it bounds the
// whole command), open files, file size, address space and CPU time
// (prlimit). Its writable places are directories of its own under
// <state>/u/<box> (0700, its uid's); the box's directory and the state
// directory above it are traversable, not listable, by other uids; its
// inputs and {acceptance} are copies it cannot write. At its end every
// process of the uid is killed (kill -1 as the uid, then each one left, as
// root), however it was started. There is no namespace: it sees the host's
// files as any other uid does, every process's command line, and every
// loopback port.

// uidCPUSeconds is RLIMIT_CPU of a uid-level command's processes: two cores
// for the default --subject-timeout.
const uidCPUSeconds = 1200

// capability bits of /proc/self/status CapEff (linux/capability.h).
const (
	capKill    = 5
	capSetGID  = 6
	capSetUID  = 7
	capSetPCap = 8
)

// AvailableUID says why uid-level boxes cannot be made here ("" when they
// can).
func AvailableUID() string {
	if os.Geteuid() != 0 {
		return "the grader is not root: it cannot run a command as another uid"
	}
	eff, err := effectiveCaps()
	if err != nil {
		return "cannot read the grader's capabilities: " + err.Error()
	}
	for _, c := range []struct {
		bit  uint
		name string
	}{{capSetUID, "CAP_SETUID"}, {capSetGID, "CAP_SETGID"}, {capKill, "CAP_KILL"}, {capSetPCap, "CAP_SETPCAP"}} {
		if eff&(1<<c.bit) == 0 {
			return "the grader lacks " + c.name
		}
	}
	for _, t := range []string{"setpriv", "prlimit"} {
		if _, err := exec.LookPath(t); err != nil {
			return t + " (util-linux) is not installed"
		}
	}
	return ""
}

// effectiveCaps is CapEff of this process.
func effectiveCaps() (uint64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff line")
}

// ProbeUID says why uid-level boxes cannot be made here ("" when they
// can): AvailableUID, then one really opened, run and closed.
func ProbeUID(cfg Config) string {
	if why := AvailableUID(); why != "" {
		return why
	}
	dir, err := os.MkdirTemp("", "acceptance-confine-probe-")
	if err != nil {
		return "no temporary directory for the probe: " + err.Error()
	}
	defer os.RemoveAll(dir)
	cfg.Level = LevelUID
	b, err := Open(cfg, Request{Name: "probe", SubmissionDir: dir})
	if err != nil {
		return "a uid-level box could not be made here: " + err.Error()
	}
	cmd := b.Command([]string{"/bin/sh", "-c", "test \"$(id -u)\" != 0 && touch \"$HOME/probe\""}, []string{"PATH=/usr/bin:/bin", "HOME=" + b.Path(InsideHome)}, "")
	out, err := cmd.CombinedOutput()
	b.Close()
	if err != nil {
		return fmt.Sprintf("a uid-level box could not run a command here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}

// openUID is Open at LevelUID.
func openUID(b *Box) (err error) {
	cfg := b.cfg
	b.st.Level = LevelUID
	if why := AvailableUID(); why != "" {
		return errors.New(why)
	}
	if err := b.takeUID(); err != nil {
		return err
	}
	b.st.UID = b.uid
	// A process of this uid a dead grader left (no record) goes first.
	killUID(b.uid, 2*time.Second)
	b.st.enforce(fmt.Sprintf("uid %d of its own, no capabilities, no_new_privs", b.uid))
	if err := b.saveRecord(); err != nil {
		return err
	}
	// The state directory and u/ are traversable by the box's uid (its own
	// directory below), not listable; boxes/ and uids/ stay 0700.
	if err := os.Chmod(cfg.StateDir, 0o711); err != nil {
		return fmt.Errorf("confine: state dir: %w", err)
	}
	for d := filepath.Dir(filepath.Clean(cfg.StateDir)); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o001 == 0 {
			return fmt.Errorf("confine: the state directory's parent %s is not traversable by other uids: a uid-level box could not reach its own directory", d)
		}
		if d == "/" {
			break
		}
	}
	u := filepath.Join(cfg.StateDir, "u")
	if err := os.MkdirAll(u, 0o711); err != nil {
		return fmt.Errorf("confine: state dir: %w", err)
	}
	if err := os.Chmod(u, 0o711); err != nil {
		return err
	}
	b.scratch = filepath.Join(u, b.name)
	if err := os.Mkdir(b.scratch, 0o711); err != nil {
		return fmt.Errorf("confine: scratch: %w", err)
	}
	if err := b.saveRecord(); err != nil {
		return err
	}
	for _, d := range []string{"sub", "home", "tmp", "out", "in"} {
		if err := os.Mkdir(filepath.Join(b.scratch, d), 0o700); err != nil {
			return fmt.Errorf("confine: scratch: %w", err)
		}
	}
	base := filepath.Base(filepath.Clean(b.req.SubmissionDir))
	if base == "/" || base == "." || strings.HasPrefix(base, ".") {
		base = "submission"
	}
	b.inside = filepath.Join(b.scratch, "sub", base)
	if err := os.Mkdir(b.inside, 0o700); err != nil {
		return fmt.Errorf("confine: scratch: %w", err)
	}
	if b.req.SubmissionDir != "" {
		if err := copyTree(b.req.SubmissionDir, b.inside, MaxCopyInBytes); err != nil {
			return fmt.Errorf("confine: copying the submission in: %w", err)
		}
		if b.req.ShowSiblings {
			// ../<sibling> leads to the host's directory (read as any uid
			// reads it: the grader's own files are not there).
			parent := filepath.Dir(filepath.Clean(b.req.SubmissionDir))
			ents, _ := os.ReadDir(parent)
			for _, e := range ents {
				if e.Name() != base && e.IsDir() {
					_ = os.Symlink(filepath.Join(parent, e.Name()), filepath.Join(b.scratch, "sub", e.Name()))
				}
			}
		}
	}
	if err := b.copyInUID(); err != nil {
		return err
	}
	for _, d := range []string{"sub", "home", "tmp", "out"} {
		if err := chownTree(filepath.Join(b.scratch, d), b.uid); err != nil {
			return fmt.Errorf("confine: chown: %w", err)
		}
	}
	b.st.enforce("its own directories (the submission's copy, $HOME, $TMPDIR, {out}) closed to other uids; inputs and {acceptance} copies it cannot write")
	l := cfg.Limits
	b.st.enforce(fmt.Sprintf("rlimits: %d processes of its uid, %d open files, files ≤ %d MiB, address space ≤ %d MiB per process, %d s CPU per process",
		l.Pids, l.NoFile, l.DiskBytes>>20, uidAddressSpace(l)>>20, uidCPUSeconds))
	b.st.enforce("every process of its uid killed at its end")
	if cfg.LevelWhy != "" {
		b.st.Degraded = append(b.st.Degraded, "level uid: "+cfg.LevelWhy)
	}
	for _, w := range Lacks(LevelUID) {
		b.st.Degraded = append(b.st.Degraded, "level uid: "+w)
	}
	b.st.Mode = "partial"
	return b.saveRecord()
}

// uidAddressSpace is RLIMIT_AS at the uid level: twice the memory limit
// (address space is not resident memory: runtimes reserve more than they
// use).
func uidAddressSpace(l Limits) int64 { return 2 * l.MemoryBytes }

// copyInUID copies Request.Copies and Request.Files into in/<i>/<name>
// (root's, read-only to the box; Files keep their execute bit): the box's
// uid may not be able to reach the host's path (a test binary under a 0700
// directory), and must never write it.
func (b *Box) copyInUID() error {
	b.paths = map[string]string{}
	var total int64
	i := 0
	add := func(inside, src string, exe bool) error {
		dir := filepath.Join(b.scratch, "in", strconv.Itoa(i))
		i++
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("confine: copying %s in: %w", inside, err)
		}
		defer in.Close()
		fi, err := in.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			err = errors.New("not a regular file")
		}
		if err == nil && !exe && total+fi.Size() > MaxCopyInBytes {
			err = fmt.Errorf("over the %d MiB the box copies in", MaxCopyInBytes>>20)
		}
		if err != nil {
			return fmt.Errorf("confine: copying %s in: %w", inside, err)
		}
		if !exe {
			total += fi.Size()
		}
		mode := os.FileMode(0o444)
		if exe {
			mode = 0o555
		}
		dst := filepath.Join(dir, filepath.Base(inside))
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
		if err == nil {
			_, err = io.Copy(out, io.LimitReader(in, fi.Size()))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("confine: copying %s in: %w", inside, err)
		}
		b.paths[inside] = dst
		return nil
	}
	for _, p := range sortedKeys(b.req.Copies) {
		if err := add(p, b.req.Copies[p], false); err != nil {
			return err
		}
	}
	for _, p := range sortedKeys(b.req.Files) {
		if err := add(p, b.req.Files[p], true); err != nil {
			return err
		}
	}
	return os.Chmod(filepath.Join(b.scratch, "in"), 0o755)
}

// Path is where the command finds what a full box shows at inside
// (InsideOut, InsideHome, InsideCSV, InsideAcceptance, "/tmp", a key of
// Request.Copies or Files): the same path in a full box, the box's own
// directory at the uid level.
func (b *Box) Path(inside string) string {
	if b.st.Level != LevelUID {
		return inside
	}
	switch inside {
	case InsideOut:
		return filepath.Join(b.scratch, "out")
	case InsideHome:
		return filepath.Join(b.scratch, "home")
	case "/tmp":
		return filepath.Join(b.scratch, "tmp")
	}
	if p, ok := b.paths[inside]; ok {
		return p
	}
	return inside
}

// Level is the level the box confines at.
func (b *Box) Level() Level { return b.st.Level }

// commandUID is Command at LevelUID.
func (b *Box) commandUID(argv, env []string, dir string) *exec.Cmd {
	if dir == "" {
		dir = b.inside
	}
	u := strconv.Itoa(b.uid)
	full := append([]string{b.setpriv, "--reuid", u, "--regid", u, "--clear-groups",
		"--inh-caps", "-all", "--bounding-set", "-all", "--no-new-privs", "--"}, argv...)
	l := b.cfg.Limits
	lim := func(name string, v int64) string {
		s := strconv.FormatInt(v, 10)
		return "--" + name + "=" + s + ":" + s
	}
	// Soft and hard: the command, without capabilities, cannot raise them.
	full = append([]string{b.prlimit, lim("nproc", l.Pids), lim("nofile", l.NoFile), lim("fsize", l.DiskBytes),
		lim("as", uidAddressSpace(l)), lim("cpu", uidCPUSeconds), lim("core", 0), "--"}, full...)
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = append(append([]string{}, env...), "TMPDIR="+b.Path("/tmp"))
	cmd.Dir = dir
	return cmd
}

// uidPids are the live (not zombie) processes whose real, effective, saved
// or filesystem uid is uid.
func uidPids(uid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	want := strconv.Itoa(uid)
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		mine, zombie := false, false
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "State:"); ok {
				zombie = strings.HasPrefix(strings.TrimSpace(v), "Z")
			}
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				for _, f := range strings.Fields(v) {
					mine = mine || f == want
				}
			}
		}
		if mine && !zombie {
			out = append(out, pid)
		}
	}
	return out
}

// killUID kills every process of uid: kill -1 as the uid (one sweep the
// uid's own forks cannot outrun), then each one still there, as root, until
// none is left or timeout; it returns how many survived.
func killUID(uid int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		pids := uidPids(uid)
		if len(pids) == 0 {
			return 0
		}
		// The shell's own kill: no process of its own to fork.
		c := exec.Command("/bin/sh", "-c", "kill -KILL -1")
		c.Env = []string{"PATH=/usr/bin:/bin"}
		c.Dir = "/"
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
		_ = c.Run() // the shell dies of its own kill -1
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return len(uidPids(uid))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
