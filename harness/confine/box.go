package confine

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Box is one command's confinement, from Open to Close.
type Box struct {
	cfg  Config
	req  Request
	name string
	st   *Status

	uid     int
	uidLock *os.File

	scratch string // tmpfs (or plain directory): sub/, home/, tmp/, out/, etc/
	mounted bool
	cg      *cgroup
	net     *network
	inside  string // the working directory inside
	// paths: at LevelUID, where the copies of Request.Copies and Files are
	// (inside path → the copy).
	paths map[string]string

	bwrap, setpriv, prlimit string
	closeOnce               sync.Once
}

// record is a box's state file: what the next grader start removes when
// this grader died before Close.
type record struct {
	Name        string   `json:"name"` // Request.Name, for people reading it
	GraderPid   int      `json:"grader_pid"`
	GraderStart uint64   `json:"grader_start"` // /proc/<pid>/stat starttime, so a reused pid is not mistaken for it
	Cgroups     []string `json:"cgroups"`
	CgroupV2    bool     `json:"cgroup_v2"`
	Netns       string   `json:"netns"`
	Scratch     string   `json:"scratch"`
	Mounted     bool     `json:"mounted"`
	// UID: a uid-level box's uid (its processes are killed by uid).
	UID   int   `json:"uid,omitempty"`
	Level Level `json:"level,omitempty"`
}

var seq atomic.Int64

// Available says why boxes cannot be made on this machine ("" when they can).
func Available() string {
	if os.Geteuid() != 0 {
		return "the grader is not root: no uid of its own, no cgroup, no network namespace for a command"
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		return "bubblewrap (bwrap) is not installed (make deps)"
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		return "setpriv (util-linux) is not installed"
	}
	return ""
}

// Open makes the box. An error means the command cannot be confined at all
// (the caller's harness error); pieces the machine lacks are degraded in
// Status. Close must follow.
func Open(cfg Config, req Request) (b *Box, err error) {
	if cfg.Level != LevelUID {
		if why := Available(); why != "" {
			return nil, errors.New(why)
		}
	}
	if cfg.StateDir == "" {
		cfg.StateDir = DefaultStateDir
	}
	if cfg.UIDBase <= 0 {
		cfg.UIDBase = DefaultUIDBase
	}
	if cfg.UIDCount <= 0 {
		cfg.UIDCount = DefaultUIDCount
	}
	cfg.Limits = cfg.Limits.withDefaults()
	reapOnce.Do(func() { _, _ = Reap(cfg.StateDir) })
	GraderNoFile()
	// Opaque: the name shows inside the box (bwrap's command line, the
	// cgroup path), so it carries nothing of the request's name.
	b = &Box{cfg: cfg, req: req, st: &Status{Mode: "confined", Level: LevelFull, Enforced: []string{}, Limits: &cfg.Limits},
		name: fmt.Sprintf("acc-%d-%s", os.Getpid(), randomName())}
	seq.Add(1)
	b.bwrap, _ = exec.LookPath("bwrap")
	b.setpriv, _ = exec.LookPath("setpriv")
	b.prlimit, _ = exec.LookPath("prlimit")
	defer func() {
		if err != nil {
			b.Close()
			b = nil
		}
	}()
	for _, d := range []string{"boxes", "uids", "scratch"} {
		if err := os.MkdirAll(filepath.Join(cfg.StateDir, d), 0o700); err != nil {
			return b, fmt.Errorf("confine: state dir: %w", err)
		}
	}
	if cfg.Level == LevelUID {
		return b, openUID(b)
	}
	if err := b.takeUID(); err != nil {
		return b, err
	}
	b.st.UID = b.uid
	b.st.enforce(fmt.Sprintf("uid %d of its own", b.uid))
	if err := b.saveRecord(); err != nil { // before anything it names exists
		return b, err
	}
	if err := b.makeScratch(); err != nil {
		return b, err
	}
	if err := b.saveRecord(); err != nil {
		return b, err
	}
	if cg, err := newCgroup(b.name, cfg.Limits, b.st); err != nil {
		b.st.degrade("cgroup (limits, kill of every descendant)", err)
	} else {
		b.cg = cg
		b.st.enforce("a cgroup of its own, killed whole at the end")
	}
	if err := b.saveRecord(); err != nil {
		return b, err
	}
	n, err := newNetwork(b.name, b.uid, req, cfg.Limits.Conns)
	if err != nil {
		return b, fmt.Errorf("confine: network namespace: %w", err)
	}
	b.net = n
	b.st.enforce("network namespace: only the allowed host ports")
	b.st.enforce(fmt.Sprintf("at most %d connections at once through the grader", cfg.Limits.Conns))
	if req.Owns != nil && req.Guard != nil {
		b.st.enforce("sandbox routes: only this submission's sandboxes")
	}
	if err := b.saveRecord(); err != nil {
		return b, err
	}
	b.st.enforce("pid, mount, ipc and uts namespaces; host system read-only")
	if b.prlimit != "" {
		b.st.enforce(fmt.Sprintf("at most %d open files per process (RLIMIT_NOFILE)", cfg.Limits.NoFile))
	} else {
		b.st.degrade(fmt.Sprintf("RLIMIT_NOFILE %d", cfg.Limits.NoFile), errors.New("prlimit (util-linux) is not installed"))
	}
	if len(b.st.Degraded) > 0 {
		b.st.Mode = "partial"
	}
	return b, nil
}

// Status is the box's status (refusals up to now).
func (b *Box) Status() *Status {
	if b.net != nil {
		b.st.Refused, b.st.RefusedCount = b.net.refusals()
		b.st.Broken, b.st.BrokenCount = b.net.broken()
	}
	return b.st
}

// UID is the uid the command runs as.
func (b *Box) UID() int { return b.uid }

// WorkDir is the submission's directory inside the box.
func (b *Box) WorkDir() string { return b.inside }

// takeUID locks a uid no other box on the machine holds.
func (b *Box) takeUID() error {
	start := int(seq.Load()*7919+int64(os.Getpid())) % b.cfg.UIDCount
	for i := 0; i < b.cfg.UIDCount; i++ {
		uid := b.cfg.UIDBase + (start+i)%b.cfg.UIDCount
		f, err := os.OpenFile(filepath.Join(b.cfg.StateDir, "uids", strconv.Itoa(uid)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			return fmt.Errorf("confine: uid lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		b.uid, b.uidLock = uid, f
		return nil
	}
	return errors.New("confine: every uid of the range is held by another box")
}

// makeScratch mounts the box's tmpfs (its disk quota) and fills it: the
// submission's copy, /tmp, $HOME, /out, /etc/passwd and /etc/group.
func (b *Box) makeScratch() error {
	b.scratch = filepath.Join(b.cfg.StateDir, "scratch", b.name)
	if err := os.MkdirAll(b.scratch, 0o700); err != nil {
		return fmt.Errorf("confine: scratch: %w", err)
	}
	opts := fmt.Sprintf("size=%d,mode=0755", b.cfg.Limits.DiskBytes)
	if err := unix.Mount("tmpfs", b.scratch, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		b.st.degrade(fmt.Sprintf("disk quota (%d MiB tmpfs)", b.cfg.Limits.DiskBytes>>20), err)
	} else {
		b.mounted = true
		b.st.enforce(fmt.Sprintf("disk ≤ %d MiB (its copy, /tmp, $HOME and /out)", b.cfg.Limits.DiskBytes>>20))
	}
	for _, d := range []string{"sub", "home", "tmp", "out", "etc", "in"} {
		if err := os.Mkdir(filepath.Join(b.scratch, d), 0o700); err != nil {
			return fmt.Errorf("confine: scratch: %w", err)
		}
	}
	base := filepath.Base(filepath.Clean(b.req.SubmissionDir))
	if base == "/" || base == "." || strings.HasPrefix(base, ".") {
		base = "submission"
	}
	b.inside = filepath.Join(InsideRoot, base)
	if b.req.SubmissionDir != "" {
		if err := copyTree(b.req.SubmissionDir, filepath.Join(b.scratch, "sub"), MaxCopyInBytes); err != nil {
			return fmt.Errorf("confine: copying the submission in: %w", err)
		}
	}
	if err := b.copyFilesIn(); err != nil {
		return err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/usr/sbin/nologin\n%s:x:%d:%d:%s:%s:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		UserName, b.uid, b.uid, UserName, InsideHome)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\nnogroup:x:65534:\n", UserName, b.uid)
	if err := os.WriteFile(filepath.Join(b.scratch, "etc", "passwd"), []byte(passwd), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.scratch, "etc", "group"), []byte(group), 0o644); err != nil {
		return err
	}
	for _, d := range []string{"sub", "home", "tmp", "out"} {
		if err := chownTree(filepath.Join(b.scratch, d), b.uid); err != nil {
			return fmt.Errorf("confine: chown: %w", err)
		}
	}
	return os.Chmod(filepath.Join(b.scratch, "etc"), 0o755)
}

// copyFilesIn copies Request.Copies into the scratch's in/ (read-only for
// the box), one file each, named by its place in the sorted inside paths.
func (b *Box) copyFilesIn() error {
	var total int64
	for i, p := range sortedKeys(b.req.Copies) {
		src := b.req.Copies[p]
		in, err := os.OpenFile(src, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return fmt.Errorf("confine: copying %s in: %w", p, err)
		}
		fi, err := in.Stat()
		if err == nil && !fi.Mode().IsRegular() {
			err = fmt.Errorf("not a regular file")
		}
		if err == nil && total+fi.Size() > MaxCopyInBytes {
			err = fmt.Errorf("over the %d MiB the box copies in", MaxCopyInBytes>>20)
		}
		if err != nil {
			in.Close()
			return fmt.Errorf("confine: copying %s in: %w", p, err)
		}
		total += fi.Size()
		dst := filepath.Join(b.scratch, "in", strconv.Itoa(i))
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
		if err == nil {
			_, err = io.Copy(out, io.LimitReader(in, fi.Size()))
			if cerr := out.Close(); err == nil {
				err = cerr
			}
		}
		in.Close()
		if err != nil {
			return fmt.Errorf("confine: copying %s in: %w", p, err)
		}
	}
	return os.Chmod(filepath.Join(b.scratch, "in"), 0o755)
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// randomName is 12 random hex digits.
func randomName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// copyTree copies src into dst: directories, regular files, symbolic links
// as links (they resolve inside the box); nothing else. More than max bytes
// is an error.
func copyTree(src, dst string, max int64) error {
	var total int64
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(to, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			t, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(t, to)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if total += fi.Size(); total > max {
				return fmt.Errorf("the submission directory is over %d MiB", max>>20)
			}
			return copyFile(p, to, fi.Mode().Perm()|0o600)
		}
		return nil
	})
}

func copyFile(from, to string, perm os.FileMode) error {
	in, err := os.OpenFile(from, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}

// Command is argv run in the box: env is its whole environment (never on
// a command line), dir its working directory inside ("" = the submission).
// The returned command joins the box's cgroup before anything else runs.
func (b *Box) Command(argv, env []string, dir string) *exec.Cmd {
	if b.st.Level == LevelUID {
		return b.commandUID(argv, env, dir)
	}
	if dir == "" {
		dir = b.inside
	}
	a := []string{
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--hostname", Hostname, "--die-with-parent",
		"--ro-bind", "/usr", "/usr",
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin", "lib32", "libx32"} {
		p := "/" + l
		if t, err := os.Readlink(p); err == nil {
			a = append(a, "--symlink", t, p)
		} else if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", p, p)
		}
	}
	a = append(a, "--ro-bind", "/etc", "/etc",
		"--ro-bind", filepath.Join(b.scratch, "etc", "passwd"), "/etc/passwd",
		"--ro-bind", filepath.Join(b.scratch, "etc", "group"), "/etc/group",
		"--proc", "/proc", "--dev", "/dev")
	// bwrap makes missing parents 0700 (root's): the box's own are 0755.
	for _, d := range []string{"/home", "/capstone", InsideRoot, filepath.Dir(InsideAcceptance), filepath.Dir(InsideCSV)} {
		a = append(a, "--perms", "0755", "--dir", d)
	}
	a = append(a,
		"--bind", filepath.Join(b.scratch, "tmp"), "/tmp",
		"--bind", filepath.Join(b.scratch, "home"), InsideHome,
		"--bind", filepath.Join(b.scratch, "out"), InsideOut)
	var ro []string
	for _, p := range b.req.ReadOnly {
		p = filepath.Clean(p)
		if p == "" || !filepath.IsAbs(p) || p == "/" || strings.HasPrefix(p, "/usr/") || p == "/usr" ||
			strings.HasPrefix(p, "/proc") || strings.HasPrefix(p, "/etc") || strings.HasPrefix(p, "/dev") {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			ro = append(ro, p)
		}
	}
	sort.Strings(ro)
	made := map[string]bool{}
	for _, p := range ro {
		// Their parents are the box's own, 0755 (bwrap would make them 0700).
		var anc []string
		for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
			anc = append([]string{d}, anc...)
		}
		for _, d := range anc {
			if !made[d] {
				made[d] = true
				a = append(a, "--perms", "0755", "--dir", d)
			}
		}
	}
	for _, p := range ro {
		a = append(a, "--ro-bind", p, p)
	}
	if b.req.ShowSiblings && b.req.SubmissionDir != "" {
		a = append(a, "--ro-bind", filepath.Dir(filepath.Clean(b.req.SubmissionDir)), InsideRoot)
	}
	a = append(a, "--bind", filepath.Join(b.scratch, "sub"), b.inside)
	files := make([]string, 0, len(b.req.Files))
	for p := range b.req.Files {
		files = append(files, p)
	}
	sort.Strings(files)
	for _, p := range files {
		a = append(a, "--ro-bind", b.req.Files[p], p)
	}
	for i, p := range sortedKeys(b.req.Copies) {
		a = append(a, "--ro-bind", filepath.Join(b.scratch, "in", strconv.Itoa(i)), p)
	}
	a = append(a, "--remount-ro", "/", "--chdir", dir, "--",
		b.setpriv, "--reuid", strconv.Itoa(b.uid), "--regid", strconv.Itoa(b.uid), "--clear-groups",
		"--inh-caps", "-all", "--bounding-set", "-all", "--no-new-privs", "--")
	a = append(a, argv...)
	full := append([]string{b.bwrap}, a...)
	if b.net != nil {
		nsenter, err := exec.LookPath("nsenter")
		if err == nil {
			full = append([]string{nsenter, "--net=" + b.net.path(), "--"}, full...)
		}
	}
	if b.prlimit != "" {
		// Soft and hard: the command, without capabilities, cannot raise it.
		nofile := strconv.FormatInt(b.cfg.Limits.NoFile, 10)
		full = append([]string{b.prlimit, "--nofile=" + nofile + ":" + nofile, "--"}, full...)
	}
	if b.cg != nil {
		// The first process writes itself into the cgroup, then execs the
		// rest: every process of the box is in it from its first instruction.
		script := `while [ "$1" != -- ]; do echo $$ > "$1" || exit 125; shift; done; shift; exec "$@"`
		pre := append([]string{"/bin/sh", "-c", script, "acceptance-cgexec"}, b.cg.ProcsFiles()...)
		full = append(append(pre, "--"), full...)
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = env
	cmd.Dir = "/"
	return cmd
}

// Kill ends every process of the box (the cgroup whole).
func (b *Box) Kill() {
	if b.st.Level == LevelUID && b.uid > 0 {
		b.st.Survivors = killUID(b.uid, 5*time.Second)
		return
	}
	if b.cg != nil {
		b.st.Survivors = killCgroup(b.cg, 5*time.Second)
	}
}

// CopyOut copies the box's /out into dst (an empty or new directory of the
// grader's): regular files only, opened with O_NOFOLLOW, each at most
// MaxOutFileBytes, all together MaxOutTotalBytes, at most MaxOutDepth deep.
// Every entry counts against MaxOutFiles (directories, links and anything
// else too): past it the walk stops, and one dropped line says so. Everything
// not kept is said in Status.Dropped (the first MaxDropped) and counted in
// Status.DroppedCount; the time it took is Status.CopyOutMillis. Call it
// after the command's processes are gone (Kill).
func (b *Box) CopyOut(dst string) error {
	start := time.Now()
	defer func() { b.st.CopyOutMillis = time.Since(start).Milliseconds() }()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	c := &copier{st: b.st, dst: dst}
	return c.dir(filepath.Join(b.scratch, "out"), "", 0)
}

// copier is one copy-out's walk.
type copier struct {
	st      *Status
	dst     string
	entries int   // entries of {out} seen (every kind)
	total   int64 // bytes copied
	stopped bool  // MaxOutFiles reached: nothing more is walked
}

func (c *copier) drop(rel, why string) {
	c.st.DroppedCount++
	if len(c.st.Dropped) < MaxDropped {
		c.st.Dropped = append(c.st.Dropped, rel+": "+why)
	}
}

// dir copies the entries of the directory src ({out}/rel), depth levels
// below {out}. Only a failure to write the grader's own side is an error.
func (c *copier) dir(src, rel string, depth int) error {
	fd, err := unix.Open(src, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if rel != "" {
			c.drop(rel, "not a directory the grader could read: "+err.Error())
		}
		return nil
	}
	f := os.NewFile(uintptr(fd), src)
	// Never more than the cap allows (+1 to know there is more): a
	// directory of a million entries is not read whole.
	ents, _ := f.ReadDir(MaxOutFiles - c.entries + 1)
	f.Close()
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, d := range ents {
		if c.stopped {
			return nil
		}
		r := filepath.Join(rel, d.Name())
		if c.entries >= MaxOutFiles {
			c.stopped = true
			c.drop(r, fmt.Sprintf("over %d entries of {out} (files, directories and anything else): this and the rest were not walked", MaxOutFiles))
			return nil
		}
		c.entries++
		p := filepath.Join(src, d.Name())
		if depth >= MaxOutDepth {
			c.drop(r, "deeper than "+strconv.Itoa(MaxOutDepth))
			continue
		}
		switch {
		case d.IsDir():
			if err := os.Mkdir(filepath.Join(c.dst, r), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
			if err := c.dir(p, r, depth+1); err != nil {
				return err
			}
		case d.Type()&fs.ModeSymlink != 0:
			c.drop(r, "a symbolic link (never kept)")
		case !d.Type().IsRegular():
			c.drop(r, "not a regular file ("+d.Type().String()+")")
		default:
			if err := c.file(p, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// file copies one regular file, O_NOFOLLOW and size-capped.
func (c *copier) file(p, rel string) error {
	in, err := os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		c.drop(rel, err.Error())
		return nil
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		c.drop(rel, "not a regular file")
		return nil
	}
	if fi.Size() > MaxOutFileBytes {
		c.drop(rel, fmt.Sprintf("%d bytes, over the %d MiB cap of a file", fi.Size(), MaxOutFileBytes>>20))
		return nil
	}
	if c.total+fi.Size() > MaxOutTotalBytes {
		c.drop(rel, fmt.Sprintf("over the %d MiB cap of all outputs", MaxOutTotalBytes>>20))
		return nil
	}
	out, err := os.OpenFile(filepath.Join(c.dst, rel), os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		c.drop(rel, err.Error())
		return nil
	}
	w, err := io.Copy(out, io.LimitReader(in, MaxOutFileBytes))
	out.Close()
	if err != nil {
		return err
	}
	c.total += w
	c.st.Copied = append(c.st.Copied, rel)
	return nil
}

// Close kills what is left, removes the cgroup, the namespace and the
// scratch, releases the uid and deletes the record. Idempotent.
func (b *Box) Close() {
	b.closeOnce.Do(func() {
		b.Kill()
		if b.net != nil {
			b.Status()
			b.net.close()
		}
		if b.cg != nil {
			b.st.Usage = usageOf(b.cg) // its processes are gone: the figures are final
			_ = b.cg.Remove()
		}
		removeScratch(b.scratch, b.mounted)
		_ = os.Remove(b.recordPath())
		if b.uidLock != nil {
			_ = b.uidLock.Close()
		}
	})
}

func removeScratch(dir string, mounted bool) {
	if dir == "" {
		return
	}
	if mounted {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
	}
	_ = os.RemoveAll(dir)
}

func (b *Box) recordPath() string {
	return filepath.Join(b.cfg.StateDir, "boxes", b.name+".json")
}

func (b *Box) saveRecord() error {
	r := record{Name: b.req.Name, GraderPid: os.Getpid(), GraderStart: procStart(os.Getpid()), Scratch: b.scratch, Mounted: b.mounted, Level: b.st.Level}
	if b.st.Level == LevelUID {
		r.UID, r.Netns = b.uid, ""
		data, _ := json.Marshal(r)
		tmp := b.recordPath() + ".tmp"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			return fmt.Errorf("confine: record: %w", err)
		}
		return os.Rename(tmp, b.recordPath())
	}
	if b.cg != nil {
		r.Cgroups, r.CgroupV2 = b.cg.Unique(), b.cg.V2
	}
	if b.net != nil {
		r.Netns = b.net.name
	} else {
		r.Netns = b.name // it may exist from a half-made box
	}
	data, _ := json.Marshal(r)
	tmp := b.recordPath() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return fmt.Errorf("confine: record: %w", err)
	}
	return os.Rename(tmp, b.recordPath())
}

// procStart is the start time of pid (clock ticks since boot), 0 if unknown.
func procStart(pid int) uint64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

var reapOnce sync.Once

// Reap removes what boxes of dead graders left behind: kills their cgroups'
// processes, removes the cgroups, namespaces and scratch mounts. It returns
// how many boxes it cleaned. Boxes of live graders are left alone.
func Reap(stateDir string) (int, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir
	}
	entries, err := os.ReadDir(filepath.Join(stateDir, "boxes"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(stateDir, "boxes", e.Name())
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var r record
		if json.Unmarshal(data, &r) != nil {
			_ = os.Remove(p)
			continue
		}
		if r.GraderPid > 0 && syscall.Kill(r.GraderPid, 0) == nil && procStart(r.GraderPid) == r.GraderStart {
			continue // its grader is alive
		}
		if r.Level == LevelUID {
			if r.UID > 0 {
				if left := killUID(r.UID, 5*time.Second); left > 0 {
					errs = append(errs, fmt.Errorf("confine: %d process(es) of %s survive", left, e.Name()))
				}
			}
			removeScratch(r.Scratch, false)
			_ = os.Remove(p)
			n++
			continue
		}
		cg := &cgroup{V2: r.CgroupV2, Dirs: map[string]string{}}
		for _, d := range r.Cgroups {
			ctrl := filepath.Base(filepath.Dir(filepath.Dir(d)))
			if r.CgroupV2 {
				ctrl = "freezer"
				cg.Dirs["freezer"] = d
				continue
			}
			cg.Dirs[ctrl] = d
		}
		if left := killCgroup(cg, 5*time.Second); left > 0 {
			errs = append(errs, fmt.Errorf("confine: %d process(es) of %s survive", left, e.Name()))
		}
		if err := cg.Remove(); err != nil {
			errs = append(errs, err)
		}
		if r.Netns != "" {
			deleteNetns(r.Netns)
		}
		removeScratch(r.Scratch, true)
		_ = os.Remove(p)
		n++
	}
	return n, errors.Join(errs...)
}

// WatchExe reports, once stop is closed, whether any process of the box
// ran the host file exe (same device and inode: {acceptance}, however it
// was invoked: a script, a copy is not it). It samples the box's processes
// every interval while the command runs.
func (b *Box) WatchExe(exe string, interval time.Duration, stop <-chan struct{}) <-chan bool {
	out := make(chan bool, 1)
	var want unix.Stat_t
	pids := func() []int { return b.cg.Pids() }
	if b.st.Level == LevelUID {
		// The command runs the box's copy of {acceptance}.
		if c, ok := b.paths[InsideAcceptance]; ok {
			exe = c
		}
		pids = func() []int { return uidPids(b.uid) }
	} else if b.cg == nil {
		exe = ""
	}
	if exe == "" || unix.Stat(exe, &want) != nil {
		out <- false
		return out
	}
	go func() {
		seen := false
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			for _, pid := range pids() {
				var st unix.Stat_t
				if unix.Stat(fmt.Sprintf("/proc/%d/exe", pid), &st) == nil && st.Dev == want.Dev && st.Ino == want.Ino {
					seen = true
				}
			}
			if seen {
				out <- true
				return
			}
			select {
			case <-stop:
				out <- seen
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// Probe says why boxes cannot be made on this machine ("" when they can):
// Available, then one box really opened and closed (root in a container
// without the rights to make namespaces or mounts fails here).
func Probe(cfg Config) string {
	if why := Available(); why != "" {
		return why
	}
	dir, err := os.MkdirTemp("", "acceptance-confine-probe-")
	if err != nil {
		return "no temporary directory for the probe: " + err.Error()
	}
	defer os.RemoveAll(dir)
	b, err := Open(cfg, Request{Name: "probe", SubmissionDir: dir})
	if err != nil {
		return "a box could not be made here: " + err.Error()
	}
	cmd := b.Command([]string{"/bin/true"}, []string{"PATH=/usr/bin:/bin"}, "")
	out, err := cmd.CombinedOutput()
	b.Close()
	if err != nil {
		return fmt.Sprintf("a box could not run a command here: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return ""
}
