package boxpolicy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/confine"
)

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
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			ok, why := sp.check(p)
			assert.False(t, ok, "port %d", p)
			if why != "" {
				unsure.Add(1)
				first.CompareAndSwap(nil, why)
			}
		}(40000 + i)
		time.Sleep(3 * time.Millisecond)
	}
	wg.Wait()
	assert.Zero(t, unsure.Load(), "refusals judged by a look-up that read everything, reported unsure (first: %v)", first.Load())
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
