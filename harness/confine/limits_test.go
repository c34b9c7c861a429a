package confine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSandboxRoute(t *testing.T) {
	for _, c := range []struct {
		path string
		id   string
		ok   bool
	}{
		{"/v1/sandboxes/abc", "abc", true},
		{"/sandboxes/abc", "abc", true},
		{"/v1/sandboxes/abc/proxy/44772/command", "abc", true},
		{"/sandboxes/abc/proxy/44772", "abc", true},
		{"/v1/sandboxes/abc/endpoints/44772", "abc", true},
		{"/v1/sandboxes/abc/metadata", "abc", true},
		{"//v1//sandboxes//abc/", "abc", true},
		{"/./v1/./sandboxes/abc", "abc", true},
		{"/V1/SandBoxes/abc", "abc", true},
		{"/v1/sandboxes%2Fabc", "abc", true},       // a server decoding twice
		{"/v1/%73andboxes/abc", "abc", true},       // encoded once more than usual
		{"/v1/sandboxes/%2561bc", "%2561bc", true}, // the id as the server sees it
		{"/api/sandboxes/abc", "abc", true},        // any one prefix: conservative
		{"/v1/sandboxes", "", false},
		{"/v1/sandboxes/", "", false},
		{"/sandboxes", "", false},
		{"/health", "", false},
		{"/v1/snapshots/s1", "", false},
		{"/v1/pools/p", "", false},
		{"/", "", false},
		{"", "", false},
		{"/a/b/sandboxes/abc", "", false}, // no route of any server has it that deep
	} {
		id, ok := SandboxRoute(c.path)
		assert.Equal(t, c.ok, ok, c.path)
		assert.Equal(t, c.id, id, c.path)
	}
}

func TestRequestSandboxReadsRawAndAbsoluteForms(t *testing.T) {
	r := httptest.NewRequest("GET", "http://127.0.0.1:1/v1/sandboxes/theirs/proxy/44772/command", nil)
	r.RequestURI = "http://127.0.0.1:1/v1/sandboxes/theirs/proxy/44772/command"
	id, ok := requestSandbox(r)
	assert.True(t, ok)
	assert.Equal(t, "theirs", id)
	r = httptest.NewRequest("GET", "/v1/sandboxes?x=/sandboxes/theirs", nil)
	_, ok = requestSandbox(r)
	assert.False(t, ok, "a query names no route")
}

func TestLimitsDefaults(t *testing.T) {
	l := Limits{}.withDefaults()
	assert.Equal(t, int64(1024), l.NoFile)
	assert.Equal(t, int64(256), l.Conns)
	l = Limits{NoFile: 4096, Conns: 8}.withDefaults()
	assert.Equal(t, int64(4096), l.NoFile)
	assert.Equal(t, int64(8), l.Conns)
}

func TestGraderNoFileRaisedWithReserve(t *testing.T) {
	limit, reserve := GraderNoFile()
	assert.GreaterOrEqual(t, reserve, uint64(MinGraderReserve))
	assert.GreaterOrEqual(t, reserve, limit/4)
	var rl struct{ cur, max uint64 }
	rl.cur, rl.max = softHardNoFile(t)
	assert.Equal(t, rl.max, rl.cur, "the grader's soft limit is raised to its hard limit")
	assert.Equal(t, int64((limit-reserve)/3), fdBudget)
}

// copyOutOf runs CopyOut over a tree made by fill under a plain scratch
// directory (no box: the walk's caps are the grader's code alone).
func copyOutOf(t *testing.T, fill func(out string)) (*Status, string, time.Duration) {
	t.Helper()
	scratch := t.TempDir()
	out := filepath.Join(scratch, "out")
	require.NoError(t, os.Mkdir(out, 0o755))
	fill(out)
	b := &Box{scratch: scratch, st: &Status{}}
	dst := filepath.Join(t.TempDir(), "dst")
	start := time.Now()
	require.NoError(t, b.CopyOut(dst))
	return b.st, dst, time.Since(start)
}

func countEntries(t *testing.T, dir string) int {
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if p != dir {
			n++
		}
		return err
	}))
	return n
}

func TestCopyOutCountsEveryEntry(t *testing.T) {
	st, dst, _ := copyOutOf(t, func(out string) {
		for i := 0; i < 600; i++ {
			require.NoError(t, os.Mkdir(filepath.Join(out, fmt.Sprintf("d%04d", i)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(out, fmt.Sprintf("d%04d", i), "f"), []byte("x"), 0o644))
		}
		require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(out, "a-link")))
	})
	assert.Equal(t, MaxOutFiles, countEntries(t, dst)+1, "every entry counts: directories, files and the link (dropped)")
	assert.Len(t, st.Copied, MaxOutFiles/2-1)
	assert.Contains(t, st.Dropped[0], "a-link: a symbolic link")
	assert.Len(t, st.Dropped, 2, "the link, then one line for everything not walked")
	assert.Contains(t, st.Dropped[1], "over 1000 entries of {out}")
	assert.Equal(t, 2, st.DroppedCount)
}

func TestCopyOutDroppedListBounded(t *testing.T) {
	st, dst, _ := copyOutOf(t, func(out string) {
		for i := 0; i < 2002; i++ {
			require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(out, fmt.Sprintf("l%04d", i))))
		}
	})
	assert.Empty(t, st.Copied)
	assert.Len(t, st.Dropped, MaxDropped, "the first MaxDropped listed")
	assert.Equal(t, MaxOutFiles+1, st.DroppedCount, "1,000 links dropped and one line for the rest, not walked")
	assert.Zero(t, countEntries(t, dst))
}

func TestCopyOutDepthAndSizeStillCapped(t *testing.T) {
	st, dst, _ := copyOutOf(t, func(out string) {
		deep := filepath.Join(out, "1", "2", "3", "4", "5", "6", "7", "8", "9")
		require.NoError(t, os.MkdirAll(deep, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(deep, "f"), []byte("x"), 0o644))
		f, err := os.Create(filepath.Join(out, "big"))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(MaxOutFileBytes+1))
		f.Close()
	})
	assert.Contains(t, strings.Join(st.Dropped, "\n"), "1/2/3/4/5/6/7/8/9: deeper than 8")
	assert.Contains(t, strings.Join(st.Dropped, "\n"), "big: 67108865 bytes, over")
	_, err := os.Stat(filepath.Join(dst, "1", "2", "3", "4", "5", "6", "7", "8"))
	assert.NoError(t, err)
	_, err = os.Stat(filepath.Join(dst, "1", "2", "3", "4", "5", "6", "7", "8", "9"))
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

// An attack on the grader's copy-out: 100,000 empty directories in {out},
// made by a real box. Copy-out stops at the cap at once.
func TestBoxCopyOut100kDirectoriesCapped(t *testing.T) {
	if testing.Short() {
		t.Skip("makes 100,000 directories in a real box")
	}
	cfg := needBoxes(t)
	b, err := Open(cfg, Request{Name: "dirs", SubmissionDir: t.TempDir()})
	require.NoError(t, err)
	defer b.Close()
	cmd := b.Command([]string{"python3", "-c", `
import os
for i in range(1000):
    d = "/out/%03d" % i
    os.mkdir(d)
    for j in range(100):
        os.mkdir(d + "/%02d" % j)
print("made", sum(len(os.listdir("/out/" + x)) + 1 for x in os.listdir("/out")))
`}, []string{"PATH=/usr/bin:/bin"}, "")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), "made 101000")
	b.Kill()
	dst := t.TempDir()
	start := time.Now()
	require.NoError(t, b.CopyOut(dst))
	took := time.Since(start)
	st := b.Status()
	assert.Less(t, took, 2*time.Second, "capped quickly (14 s uncapped)")
	assert.Equal(t, MaxOutFiles, countEntries(t, dst), "at most MaxOutFiles entries re-made")
	assert.LessOrEqual(t, len(st.Dropped), MaxDropped)
	assert.Equal(t, 1, st.DroppedCount, "one line for what was not walked")
	assert.Contains(t, st.Dropped[0], "not walked")
	assert.LessOrEqual(t, st.CopyOutMillis, took.Milliseconds())
}

func TestBoxNoFileLimit(t *testing.T) {
	cfg := needBoxes(t)
	r := run(t, cfg, Request{}, `ulimit -Sn; ulimit -Hn; ulimit -n 4096 2>/dev/null && echo RAISED
python3 -c '
import os
fds = []
try:
    while True:
        fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print("opened", len(fds), e.errno)
'`)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.GreaterOrEqual(t, len(lines), 3, r.stdout+r.stderr)
	assert.Equal(t, "1024", lines[0])
	assert.Equal(t, "1024", lines[1])
	assert.NotContains(t, r.stdout, "RAISED", "the box cannot raise its own limit")
	assert.Regexp(t, `opened 10[12]\d 24`, r.stdout, "EMFILE at the box's limit")
	assert.Contains(t, strings.Join(r.box.Status().Enforced, "\n"), "at most 1024 open files per process")
}

// graderFDs is how many descriptors this process holds.
func graderFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

// An attack on the grader's descriptors: a box opens 5,000 idle keep-alive connections to
// an HTTP service (through the guard) and a raw one (the forwarder). The box
// holds at most Limits.Conns; the rest are refused and recorded as its
// connection cap; the grader's descriptors stay bounded and come back to
// their baseline; another box meanwhile is served.
func TestBoxConnectionCap5000Idle(t *testing.T) {
	if testing.Short() {
		t.Skip("5,000 connections from a real box")
	}
	cfg := needBoxes(t)
	httpSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("served\n")) }))
	defer httpSrv.Close()
	rawLn, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	var rawMu sync.Mutex
	var rawConns []net.Conn
	go func() {
		for {
			c, err := rawLn.Accept()
			if err != nil {
				return
			}
			rawMu.Lock()
			rawConns = append(rawConns, c)
			rawMu.Unlock()
			go func() { // plain copy: no splice pipes held
				_, _ = io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 512))
				c.Close()
			}()
		}
	}()
	defer func() {
		rawLn.Close()
		rawMu.Lock()
		for _, c := range rawConns {
			c.Close()
		}
		rawMu.Unlock()
	}()
	hp := httpSrv.Listener.Addr().(*net.TCPAddr).Port
	rp := rawLn.Addr().(*net.TCPAddr).Port
	allow := func(p int) bool { return p == hp || p == rp }
	guard := func(p int) func(*http.Request) string {
		if p == hp {
			return func(*http.Request) string { return "" }
		}
		return nil
	}
	httpSrv.Client().CloseIdleConnections()
	baseline := graderFDs(t)

	attacker, err := Open(cfg, Request{Name: "attacker", SubmissionDir: t.TempDir(), Allow: allow, Guard: guard})
	require.NoError(t, err)
	defer attacker.Close()
	// Five processes (each under the box's RLIMIT_NOFILE) of 1,000 idle
	// connections: keep-alive HTTP ones to the guarded port, raw ones to the
	// other; then they hold them.
	script := fmt.Sprintf(`
for k in 0 1 2 3 4; do
python3 -c '
import socket, sys, time
k = int(sys.argv[1])
port = %d if k %% 2 == 0 else %d
held = []
for i in range(1000):
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", port))
        if k %% 2 == 0:
            s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        held.append(s)
    except OSError:
        pass
print("opened", k, len(held), flush=True)
time.sleep(300)
' $k &
done
wait
`, hp, rp)
	var out bytes.Buffer
	cmd := attacker.Command([]string{"/bin/sh", "-c", script}, []string{"PATH=/usr/bin:/bin"}, "")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, &out
	require.NoError(t, cmd.Start())
	opened := 0
	sc := bufio.NewScanner(pr)
	deadline := time.AfterFunc(60*time.Second, func() { pw.Close() })
	for opened < 5 && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "opened") {
			opened++
		}
	}
	deadline.Stop()
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	require.Equal(t, 5, opened, out.String())

	// Refusals are recorded as the forwarder accepts: wait for all 5,000.
	var st *Status
	require.Eventually(t, func() bool {
		st = attacker.Status()
		return st.RefusedCount >= 5000-int(DefaultLimits.Conns)
	}, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, 5000-int(DefaultLimits.Conns), st.RefusedCount, "every connection past the cap refused and counted")
	assert.LessOrEqual(t, int64(attacker.net.active.Load()), DefaultLimits.Conns)
	require.NotEmpty(t, st.Refused)
	for _, r := range st.Refused {
		assert.Equal(t, RefusedConnCap, r.Reason)
	}
	assert.Len(t, st.Refused, MaxRefusals)
	assert.Zero(t, st.BrokenCount, st.Broken)
	peak := graderFDs(t)
	// Each held connection costs this process at most three descriptors
	// here (the box's side, the dial upstream, and the test server's
	// accepted side); the attack's 5,000 would cost 15,000.
	assert.LessOrEqual(t, peak-baseline, 3*int(DefaultLimits.Conns)+64, "the grader's descriptors stay bounded")

	// Another box is served while the attacker holds its cap.
	other := run(t, cfg, Request{Allow: allow, Guard: guard}, fmt.Sprintf(`curl -s -m 10 http://127.0.0.1:%d/; echo hi | python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", %d), timeout=10)
s.sendall(b"echo\n"); print("raw", s.recv(10).decode().strip())'`, hp, rp))
	assert.Contains(t, other.stdout, "served\nraw echo", other.stderr)
	assert.Zero(t, other.box.Status().RefusedCount, other.box.Status().Refused)

	attacker.Close()
	_ = cmd.Wait()
	pw.Close()
	rawMu.Lock()
	for _, c := range rawConns {
		c.Close()
	}
	rawConns = nil
	rawMu.Unlock()
	httpSrv.CloseClientConnections()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	assert.Eventually(t, func() bool { return graderFDs(t) <= baseline+8 }, 15*time.Second, 100*time.Millisecond,
		"the grader's descriptors come back to their baseline")
	assert.Zero(t, fdInUse.Load(), "every box's share of the grader's descriptors given back")
}

// An attack on a classmate: a keyless request through the server proxy
// route for a sandbox not the submission's. The guard refuses it (and records it);
// the submission's own sandbox, list and create still go through.
func TestBoxGuardRefusesOtherSubmissionsSandboxes(t *testing.T) {
	cfg := needBoxes(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("served " + r.Method + " " + r.URL.Path + " key=" + r.Header.Get("OPEN-SANDBOX-API-KEY") + "\n"))
	}))
	defer srv.Close()
	sp := srv.Listener.Addr().(*net.TCPAddr).Port
	var asked sync.Map
	owns := func(id string) (bool, error) {
		asked.Store(id, true)
		switch id {
		case "mine":
			return true, nil
		case "unreadable":
			return false, errors.New("audit down")
		}
		return false, nil
	}
	guard := func(p int) func(*http.Request) string {
		if p != sp {
			return nil
		}
		return func(*http.Request) string { return "" }
	}
	r := run(t, cfg, Request{Allow: func(p int) bool { return p == sp }, Guard: guard, Owns: owns}, fmt.Sprintf(`
u=http://127.0.0.1:%d
curl -s -m 5 -X POST $u/v1/sandboxes/theirs/proxy/44772/command -d '{"command":"id"}'
curl -s -m 5 -H 'OPEN-SANDBOX-API-KEY: k' $u/sandboxes/theirs
curl -s -m 5 --path-as-is $u//v1//sandboxes/theirs/proxy/44772/
curl -s -m 5 $u/v1/sandboxes%%2Ftheirs/endpoints/44772
curl -s -m 5 $u/v1/%%73andboxes/theirs
curl -s -m 5 -X DELETE $u/v1/sandboxes/unreadable
curl -s -m 5 -X POST $u/v1/sandboxes/mine/proxy/44772/command
curl -s -m 5 $u/v1/sandboxes
curl -s -m 5 -X POST $u/v1/sandboxes -d '{}'
curl -s -m 5 -o /dev/null -w '%%{http_code}\n' $u/v1/sandboxes/theirs/metadata
`, sp))
	assert.NotContains(t, r.stdout, "theirs\n", r.stdout)
	assert.NotContains(t, r.stdout, "served POST /v1/sandboxes/theirs")
	assert.NotContains(t, r.stdout, "unreadable key")
	assert.Contains(t, r.stdout, "served POST /v1/sandboxes/mine/proxy/44772/command key=\n")
	assert.Contains(t, r.stdout, "served GET /v1/sandboxes key=\n")
	assert.Contains(t, r.stdout, "served POST /v1/sandboxes key=\n")
	assert.Contains(t, r.stdout, `refused by the grader's confinement: sandbox "theirs" is not this submission's`)
	assert.Contains(t, r.stdout, `could not tell whether sandbox "unreadable" is this submission's: audit down`)
	assert.Contains(t, r.stdout, "403\n")
	st := r.box.Status()
	assert.Equal(t, 7, st.RefusedCount, st.Refused)
	var reasons []string
	for _, x := range st.Refused {
		reasons = append(reasons, x.Addr+" "+x.Reason)
	}
	assert.Contains(t, strings.Join(reasons, "\n"), "POST /v1/sandboxes/theirs/proxy/44772/command sandbox \"theirs\" is not this submission's")
	_, ok := asked.Load("mine")
	assert.True(t, ok)
}

func softHardNoFile(t *testing.T) (uint64, uint64) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/limits")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "Max open files") {
			f := strings.Fields(l)
			var cur, max uint64
			_, err := fmt.Sscan(f[3]+" "+f[4], &cur, &max)
			require.NoError(t, err, l)
			return cur, max
		}
	}
	t.Fatal("no Max open files in /proc/self/limits")
	return 0, 0
}

// The guard closes a box's connection idle between requests (its
// descriptors come back), and never cuts a streaming answer longer than
// that: the idle timeout applies between requests only.
func TestBoxGuardIdleTimeoutSparesStreams(t *testing.T) {
	cfg := needBoxes(t)
	old := guardIdle
	guardIdle = time.Second
	defer func() { guardIdle = old }()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/stream" {
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 6; i++ { // 3 s of stream, three idle timeouts long
			_, _ = fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(500 * time.Millisecond)
		}
	}))
	defer srv.Close()
	sp := srv.Listener.Addr().(*net.TCPAddr).Port
	guard := func(p int) func(*http.Request) string {
		if p != sp {
			return nil
		}
		return func(*http.Request) string { return "" }
	}
	r := run(t, cfg, Request{Allow: func(p int) bool { return p == sp }, Guard: guard}, fmt.Sprintf(`python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", %d), timeout=10)
s.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
buf = b""
while not buf.endswith(b"0\r\n\r\n"):
    d = s.recv(4096)
    if not d:
        break
    buf += d
print("stream whole", b"data: 5" in buf, flush=True)
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
buf = b""
while b"ok" not in buf:
    d = s.recv(4096)
    if not d:
        break
    buf += d
print("keep-alive answered", b"ok" in buf, flush=True)
t0 = time.time()
d = s.recv(4096)
print("idle closed", d == b"", round(time.time() - t0) <= 3, flush=True)
'`, sp))
	assert.Contains(t, r.stdout, "stream whole True", r.stderr)
	assert.Contains(t, r.stdout, "keep-alive answered True", r.stderr)
	assert.Contains(t, r.stdout, "idle closed True True", r.stderr)
}

// A raw forwarded connection whose upstream hung up is closed soon after,
// whatever the box does: it never holds the grader's descriptors for good.
func TestBoxRawConnectionEndsAfterUpstreamHangsUp(t *testing.T) {
	cfg := needBoxes(t)
	old := halfCloseGrace
	halfCloseGrace = time.Second
	defer func() { halfCloseGrace = old }()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("bye\n"))
			c.Close()
		}
	}()
	lp := ln.Addr().(*net.TCPAddr).Port
	b, err := Open(cfg, Request{Name: "halfclose", SubmissionDir: t.TempDir(), Allow: func(p int) bool { return p == lp }})
	require.NoError(t, err)
	defer b.Close()
	cmd := b.Command([]string{"python3", "-c", fmt.Sprintf(`
import socket, time
s = socket.create_connection(("127.0.0.1", %d), timeout=10)
print(s.recv(10).decode().strip(), s.recv(10) == b"", flush=True)
time.sleep(1000)  # never closes its side
`, lp)}, []string{"PATH=/usr/bin:/bin"}, "")
	pr, pw := io.Pipe()
	cmd.Stdout = pw
	require.NoError(t, cmd.Start())
	defer func() { b.Kill(); _ = cmd.Wait(); pw.Close() }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "bye True\n", line)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	assert.Eventually(t, func() bool { return b.net.active.Load() == 0 }, 5*time.Second, 50*time.Millisecond,
		"the pair is closed HalfCloseGrace after the upstream hung up")
}

// Past the grader's descriptor bound (all boxes together), a connection is
// closed and recorded as the grader's own break, never the box's refusal.
func TestBoxGraderReserveIsTheGradersBreak(t *testing.T) {
	cfg := needBoxes(t)
	GraderNoFile()
	old := fdBudget
	fdBudget = fdInUse.Load() + 2
	defer func() { fdBudget = old }()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	lp := ln.Addr().(*net.TCPAddr).Port
	r := run(t, cfg, Request{Allow: func(p int) bool { return p == lp }}, fmt.Sprintf(`python3 -c '
import socket, time
held = [socket.create_connection(("127.0.0.1", %d)) for _ in range(5)]
time.sleep(1)
'`, lp))
	st := r.box.Status()
	assert.Zero(t, st.RefusedCount, st.Refused)
	assert.Equal(t, 3, st.BrokenCount, st.Broken)
	require.NotEmpty(t, st.Broken)
	assert.Contains(t, st.Broken[0].Reason, "descriptors in reserve")
}
