package boxpolicy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/subject"
)

func TestRefuseAdmin(t *testing.T) {
	for _, p := range []string{"/_mock/canaries", "/%5Fmock/canaries", "//_MOCK/info", "/x/../_mock/audit"} {
		assert.NotEmpty(t, RefuseAdmin(httptest.NewRequest("PUT", "http://127.0.0.1:1"+p, nil)), p)
	}
	for _, p := range []string{"/v1/sandboxes", "/v1/sandboxes/abc/endpoints/44772", "/health"} {
		assert.Empty(t, RefuseAdmin(httptest.NewRequest("GET", "http://127.0.0.1:1"+p, nil)), p)
	}
}

func TestLoopbackPort(t *testing.T) {
	for in, want := range map[string]int{
		"127.0.0.1:8080": 8080, "http://localhost:9/v1": 9, "http://127.0.0.1:41685/proxy/44772": 41685,
		"127.0.0.1:41685/proxy/44772": 41685, "http://data-api.capstone.test/v1/x": 0, "10.0.0.1:80": 0, "": 0,
	} {
		assert.Equal(t, want, LoopbackPort(in), in)
	}
}

// TestPortLookUpNeverHoldsABoxConnection reproduces the hostile grade's
// hang: a box connection asks for a port not known yet while the bundled
// server's audit never answers. No connection waits longer than the
// look-up's bound, a port already known answers at once meanwhile (no lock
// is held across the read), and a look-up after the server answers again
// finds the command's sandbox.
func TestPortLookUpNeverHoldsABoxConnection(t *testing.T) {
	release := make(chan struct{})
	var audits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_mock/audit") {
			audits.Add(1)
			select { // never answers while the test holds it
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	defer close(release)
	cl, err := osb.New(strings.TrimPrefix(srv.URL, "http://"), "k", osb.WithAdminToken("admin"))
	require.NoError(t, err)
	shortLookUps(t, time.Second, 3*time.Second)

	sp := newSandboxPorts(context.Background(), cl, &command.Record{KeyFP: "fp"})
	sp.ports[7000] = true
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			ok, unsure := sp.check(p)
			assert.False(t, ok, "port %d", p)
			assert.NotEmpty(t, unsure, "port %d: the grader's failure, not a sure refusal", p)
		}(40000 + i)
	}
	time.Sleep(50 * time.Millisecond)
	known := time.Now()
	ok, _ := sp.check(7000)
	assert.True(t, ok)
	assert.Less(t, time.Since(known), portLookupLimit, "a known port waited on the look-up")
	wg.Wait()
	assert.Less(t, time.Since(start), 2*portLookupWait, "connections waited past the look-up's bound")
	assert.Positive(t, audits.Load(), "the audit was asked")
	ok, unsure := sp.check(40000)
	assert.False(t, ok)
	assert.Contains(t, unsure, "the look-up of the command's sandboxes' ports failed", "the grader's failure, not a sure refusal")

	// The server answers again: a sandbox of the command's key is found,
	// and one whose endpoint could not be read is read again next time.
	fail := true
	sp.created = func(context.Context) ([]string, error) { return []string{"sb1"}, nil }
	sp.endpoint = func(_ context.Context, id string, port int) (string, error) {
		if fail {
			return "", errors.New("not running yet")
		}
		return fmt.Sprintf("127.0.0.1:%d/proxy/%d", 50000+port%100, port), nil
	}
	execd := 50000 + osb.DefaultExecdPort%100
	ok, unsure = sp.check(execd)
	assert.False(t, ok)
	assert.Contains(t, unsure, "reading the endpoint of sandbox sb1 port 44772: not running yet")
	fail = false
	ok, _ = sp.check(execd)
	assert.True(t, ok, "a sandbox whose endpoint failed once is read again")
	ok, unsure = sp.check(12345)
	assert.False(t, ok)
	assert.Empty(t, unsure, "a look-up that read everything is sure")
}

// TestPortLookUpBeganAfterTheConnection: a connection is judged by a
// look-up that began after it arrived. One already running read the key's
// sandboxes before the command's newest create; before, the connection to
// that sandbox's execd waited on it and was refused (the SDK's health
// check after a create, refused under load).
func TestPortLookUpBeganAfterTheConnection(t *testing.T) {
	sp := newSandboxPorts(context.Background(), nil, &command.Record{})
	entered, release := make(chan struct{}), make(chan struct{})
	var created atomic.Bool
	var reads atomic.Int32
	sp.created = func(context.Context) ([]string, error) {
		if reads.Add(1) == 1 {
			close(entered)
			<-release // the first look-up read the key's sandboxes before the create
			return nil, nil
		}
		if created.Load() {
			return []string{"sb1"}, nil
		}
		return nil, nil
	}
	sp.endpoint = func(_ context.Context, id string, port int) (string, error) {
		return fmt.Sprintf("127.0.0.1:%d", 50000+port%100), nil
	}
	stale := make(chan struct{}, 1)
	sp.waiting = func(fresh bool) {
		if !fresh {
			select {
			case stale <- struct{}{}:
			default:
			}
		}
	}
	first := make(chan bool)
	go func() { ok, _ := sp.check(40001); first <- ok }() // another port: starts the first look-up
	<-entered
	created.Store(true) // the create is answered, its execd asked for
	execd := make(chan bool)
	go func() { ok, _ := sp.check(50000 + osb.DefaultExecdPort%100); execd <- ok }()
	<-stale // the execd connection waits on the look-up that began before it
	close(release)
	assert.False(t, <-first)
	assert.True(t, <-execd, "judged by a look-up that began after it")
	assert.GreaterOrEqual(t, reads.Load(), int32(2))
}

// TestOwnsSandbox: the guard's Owns asks the bundled server's audit who
// created a sandbox and compares it with the submission's keys (every
// confined command's): a classmate's sandbox is refused, the submission's
// own (any of its commands' keys) goes through, an id the server never
// created goes through (its 404 is the server's), one it holds without a
// create is not the submission's; an unreadable audit is an error; a known
// creator is asked once.
func TestOwnsSandbox(t *testing.T) {
	var auditCalls atomic.Int32
	var down atomic.Bool
	var lateReads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		switch r.URL.Path {
		case "/_mock/audit":
			auditCalls.Add(1)
			id := r.URL.Query().Get("sandbox_id")
			assert.Equal(t, "lifecycle", r.URL.Query().Get("kind"))
			creator := map[string]string{"sb-mine-run": "fp-run0000000", "sb-mine-reap": "fp-reap000000", "sb-theirs": "fp-classmate0"}[id]
			if id == "sb-late" && lateReads.Add(1) > 1 { // its create recorded after its first read
				creator = "fp-run0000000"
			}
			var evs []map[string]any
			if creator != "" {
				evs = append(evs,
					map[string]any{"seq": 1, "sandbox_id": id, "kind": "lifecycle", "lifecycle": map[string]any{"method": "GET", "path": "/v1/sandboxes/" + id, "status": 200, "key_fingerprint": "fp-run0000000"}},
					map[string]any{"seq": 2, "sandbox_id": id, "kind": "lifecycle", "lifecycle": map[string]any{"method": "POST", "path": "/v1/sandboxes", "status": 202, "key_fingerprint": creator}})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"events": evs, "last_seq": 2})
		case "/_mock/sandboxes":
			_ = json.NewEncoder(w).Encode(map[string]any{"sandboxes": []map[string]any{{"id": "sb-no-create"}, {"id": "sb-late"}}})
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cl, err := osb.New(strings.TrimPrefix(srv.URL, "http://"), "k", osb.WithAdminToken("tok"))
	require.NoError(t, err)
	var o Owners
	o.AddKey("fp-run0000000")
	o.AddKey("fp-reap000000")
	o.AddKey("")
	ctx := context.Background()
	for id, want := range map[string]bool{"sb-mine-run": true, "sb-mine-reap": true, "sb-theirs": false, "sb-never": true, "sb-no-create": false, "sb-late": true} {
		got, err := o.Owns(ctx, cl, id)
		require.NoError(t, err, id)
		assert.Equal(t, want, got, id)
	}
	n := auditCalls.Load()
	_, _ = o.Owns(ctx, cl, "sb-theirs")
	_, _ = o.Owns(ctx, cl, "sb-mine-run")
	_, _ = o.Owns(ctx, cl, "sb-never")
	assert.Equal(t, n, auditCalls.Load(), "a sandbox's creator is read once; no such sandbox is believed a moment")
	down.Store(true)
	_, err = o.Owns(ctx, cl, "sb-other")
	assert.Error(t, err, "an audit the grader cannot read: the guard refuses")
	mine, err := o.Owns(ctx, cl, "sb-theirs")
	assert.NoError(t, err)
	assert.False(t, mine, "cached")
}

// mineOnly is a class view that knows one sandbox as the submission's.
type mineOnly string

func (m mineOnly) Mine(id string) bool { return id == string(m) }

// On a real target the box's guard sits in front of its recording proxy (the
// target's port in the command's environment) and the submission's own
// sandboxes are the ones the class view says are its; on the bundled server
// the admin guard and the key owners apply instead.
func TestApplyOnARealTargetUsesTheClassView(t *testing.T) {
	spec := &subject.Spec{}
	spec.Env.Domain = "127.0.0.1:41234"
	Apply(context.Background(), Session{Confine: &confine.Config{}, View: mineOnly("sb-own"), TargetDomain: "10.0.0.9:8080",
		Owners: &Owners{}}, &command.Record{}, spec)
	require.NotNil(t, spec.Confine)
	require.NotNil(t, spec.Confine.Guard)
	g := spec.Confine.Guard(41234)
	require.NotNil(t, g, "the recording proxy's port is guarded")
	assert.Empty(t, g(httptest.NewRequest("GET", "/v1/sandboxes", nil)), "requests pass; ownership decides")
	assert.Nil(t, spec.Confine.Guard(9), "another port has no guard")
	own, err := spec.Confine.Owns("sb-own")
	assert.NoError(t, err)
	assert.True(t, own)
	own, _ = spec.Confine.Owns("sb-classmate")
	assert.False(t, own)

	none := &subject.Spec{}
	none.Env.Domain = "127.0.0.1:41234"
	Apply(context.Background(), Session{Confine: &confine.Config{}, TargetDomain: "10.0.0.9:8080", Owners: &Owners{}}, &command.Record{}, none)
	assert.Nil(t, none.Confine.Guard, "no view, no guard (the bundled server's guard needs Bundled)")
}

// At level uid a box has no network of its own: nothing to allow, guard or
// own (docs/confinement.md, "Levels").
func TestApplyAtLevelUIDHasNoNetworkPolicy(t *testing.T) {
	spec := &subject.Spec{}
	spec.Env.Domain = "127.0.0.1:41234"
	Apply(context.Background(), Session{Confine: &confine.Config{Level: confine.LevelUID}, Bundled: true,
		TargetDomain: "127.0.0.1:41234", View: mineOnly("x"), Owners: &Owners{}}, &command.Record{}, spec)
	require.NotNil(t, spec.Confine)
	assert.Equal(t, confine.LevelUID, spec.Confine.Config.Level)
	assert.Nil(t, spec.Confine.Allow)
	assert.Nil(t, spec.Confine.Guard)
	assert.Nil(t, spec.Confine.Owns)
}

// shortLookUps shortens the look-up's bounds for a test.
func shortLookUps(t *testing.T, limit, wait time.Duration) {
	oldLimit, oldWait := portLookupLimit, portLookupWait
	portLookupLimit, portLookupWait = limit, wait
	t.Cleanup(func() { portLookupLimit, portLookupWait = oldLimit, oldWait })
}

// TestPortScanRefusalsAreSure: a flood of connections to ports not the
// command's, every look-up reading everything. Each refusal is sure: its
// verdict is the look-up that judged it, given with the answer. Before, the
// box asked afterwards whether the grader was sure, and under the flood a
// look-up (the next one, started by another connection) was nearly always
// running: nine in ten of a scan's refusals were "unsure", the grader's
// breaks, and the scanning command's failures harness errors.
func TestPortScanRefusalsAreSure(t *testing.T) {
	sp := newSandboxPorts(context.Background(), nil, &command.Record{})
	sp.created = func(context.Context) ([]string, error) { time.Sleep(20 * time.Millisecond); return nil, nil }
	var unsure atomic.Int32
	var first atomic.Value
	var wg sync.WaitGroup
	for port := 40000; port < 40200; port++ { // a connection every 3 ms
		wg.Go(func() {
			if ok, why := sp.check(port); ok || why != "" {
				unsure.Add(1)
				first.CompareAndSwap(nil, fmt.Sprintf("port %d: ok %v, unsure %q", port, ok, why))
			}
		})
		time.Sleep(3 * time.Millisecond)
	}
	wg.Wait()
	assert.Zero(t, unsure.Load(), "refusals judged by a look-up that read everything, not sure ones (first: %v)", first.Load())
}

// TestPortLookUpFailureStaysUnsure: a single connection whose look-up
// genuinely fails (the audit read errs) or never answers is unsure, the
// grader's doubt, however fast the command's other connections were
// refused.
func TestPortLookUpFailureStaysUnsure(t *testing.T) {
	shortLookUps(t, 300*time.Millisecond, 500*time.Millisecond)
	sp := newSandboxPorts(context.Background(), nil, &command.Record{})
	sp.created = func(context.Context) ([]string, error) { return nil, errors.New("audit unreachable") }
	ok, why := sp.check(40001)
	assert.False(t, ok)
	assert.Contains(t, why, "failed: reading the sandboxes the command's key created: audit unreachable")

	sp.created = func(ctx context.Context) ([]string, error) { <-ctx.Done(); return nil, ctx.Err() }
	ok, why = sp.check(40002)
	assert.False(t, ok)
	assert.NotEmpty(t, why, "a look-up that never answered")
}

// boxWithPorts opens a real box whose network asks sp (as Apply sets it),
// runs script under /bin/sh and returns its status and output; onLine, when
// set, sees each line of its output as it comes.
func boxWithPorts(t *testing.T, sp *sandboxPorts, script string, onLine func(string)) (*confine.Status, string) {
	t.Helper()
	if why := confine.Available(); why != "" {
		t.Skip(why)
	}
	b, err := confine.Open(confine.Config{StateDir: t.TempDir()}, confine.Request{
		Name: t.Name(), SubmissionDir: t.TempDir(), Check: sp.check,
	})
	require.NoError(t, err)
	defer b.Close()
	pr, pw := io.Pipe()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if onLine != nil {
				onLine(sc.Text())
			}
		}
	}()
	cmd := b.Command([]string{"/bin/sh", "-c", script}, []string{"PATH=/usr/bin:/bin", "HOME=" + confine.InsideHome}, "")
	cmd.Stdout, cmd.Stderr = pw, pw
	require.NoError(t, cmd.Start())
	_ = cmd.Wait()
	_ = pw.Close()
	<-read
	b.Kill()
	return b.Status(), out.String()
}

// scanScript connects to n loopback ports from first, one every pause, and
// hangs up at once (hostile-saboteur's reachable_ports).
func scanScript(first, n int, pause string) string {
	return fmt.Sprintf(`python3 -c '
import socket, time
for p in range(%d, %d):
    s = socket.socket(); s.settimeout(0.005)
    try: s.connect_ex(("127.0.0.1", p))
    except OSError: pass
    s.close(); time.sleep(%s)
time.sleep(1.5)
print("scanned")'`, first, first+n, pause)
}

// TestBoxPortScanIsTheCommandsRefusal: a command scans 300 loopback ports
// in a real box while some of the look-ups are slow (every third one
// outlasts a connection's wait, as under a loaded server). Nothing is the
// grader's break: the refusals judged by look-ups that read everything are
// sure, and the connections left unsure (also the first ones, before the
// scan passed confine.ScanPorts) are its refusals, saying it scanned.
// Before, most of the scan was recorded as the grader's break, and the
// command's failure became a harness error.
func TestBoxPortScanIsTheCommandsRefusal(t *testing.T) {
	shortLookUps(t, 2*time.Second, 250*time.Millisecond)
	sp := newSandboxPorts(context.Background(), nil, &command.Record{})
	var reads atomic.Int32
	sp.created = func(context.Context) ([]string, error) {
		if reads.Add(1)%3 == 1 {
			time.Sleep(400 * time.Millisecond) // slow: its connections stop waiting
		}
		return nil, nil
	}
	st, out := boxWithPorts(t, sp, scanScript(40000, 300, "0.005"), nil)
	require.Contains(t, out, "scanned")
	var broken, scan []string
	for _, r := range st.Broken[:min(3, len(st.Broken))] {
		broken = append(broken, r.Addr+" "+r.Reason)
	}
	for _, r := range st.Refused {
		if strings.HasPrefix(r.Reason, confine.ScanReason+":") {
			scan = append(scan, r.Addr+" "+r.Reason)
		}
	}
	assert.Zero(t, st.BrokenCount, "the scan was recorded as the grader's break (first %d: %v)", len(broken), broken)
	assert.Equal(t, 300, st.RefusedCount, "every port of the scan refused")
	t.Logf("refused %d, of them scanning %d (listed), look-ups %d", st.RefusedCount, len(scan), reads.Load())
	require.NotEmpty(t, scan, "no connection left unsure by a slow look-up (reads %d)", reads.Load())
	assert.Contains(t, scan[0], "ports not its own asked for (more than 64: a port scan)")
	assert.Contains(t, scan[0], "did not finish within 250ms")
}

// TestBoxLookUpFailureIsTheGradersBreak: a command that reaches test
// servers of its own on 70 ports (more than confine.ScanPorts, each asked
// of the look-up, then joined inside its box) and asks for three ports not
// its own; then one more connection while its look-up genuinely fails (the
// audit read errs, or never answers). That one is the grader's break, never
// the command's refusal: the bound counts only ports refused for sure, not
// every port a command asks for.
func TestBoxLookUpFailureIsTheGradersBreak(t *testing.T) {
	shortLookUps(t, 300*time.Millisecond, 5*time.Second)
	for _, c := range []struct {
		name string
		read func(ctx context.Context) ([]string, error)
		want string
	}{
		{"audit read fails", func(context.Context) ([]string, error) { return nil, errors.New("audit unreachable") },
			"failed: reading the sandboxes the command's key created: audit unreachable"},
		{"audit never answers", func(ctx context.Context) ([]string, error) { <-ctx.Done(); return nil, ctx.Err() },
			"failed: reading the sandboxes the command's key created: context deadline exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := newSandboxPorts(context.Background(), nil, &command.Record{})
			var broken atomic.Bool
			sp.created = func(ctx context.Context) ([]string, error) {
				if broken.Load() {
					return c.read(ctx)
				}
				return nil, nil
			}
			st, out := boxWithPorts(t, sp, `python3 -c '
import socket
ls = []
for p in range(42000, 42070):
    l = socket.socket(); l.bind(("127.0.0.1", p)); l.listen(1); ls.append(l)
cs = [socket.create_connection(l.getsockname(), timeout=10) for l in ls]
for l, c in zip(ls, cs):
    a, _ = l.accept(); a.sendall(b"x")
    assert c.recv(1) == b"x"; c.close(); a.close()
print("own servers reached", len(ls))'; `+scanScript(40000, 3, "0.3")+`; echo break-now; sleep 1; python3 -c '
import socket
s = socket.socket(); s.settimeout(5); s.connect(("127.0.0.1", 41000))
try: s.recv(1)
except OSError: pass
print("late asked")'`, func(line string) {
				if line == "break-now" {
					broken.Store(true)
				}
			})
			require.Contains(t, out, "own servers reached 70")
			require.Contains(t, out, "late asked")
			require.Equal(t, 3, st.RefusedCount, "the sure refusals: %+v", st.Refused)
			require.Equal(t, 1, st.BrokenCount, "refused: %+v", st.Refused)
			assert.Equal(t, "127.0.0.1:41000", st.Broken[0].Addr)
			assert.Contains(t, st.Broken[0].Reason, "the grader could not tell whether the port is this submission's: the look-up of the command's sandboxes' ports "+c.want)
		})
	}
}
