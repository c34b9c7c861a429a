package command

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// spec is a command line run as a plain process in a fresh directory.
func spec(t *testing.T, field, cmd string, timeout time.Duration) Spec {
	dir := t.TempDir()
	return Spec{Field: field, RelDir: "evidence/" + field, Dir: dir, Command: cmd, Timeout: timeout, MaxTimeout: timeout, SubmissionDir: dir}
}

// TestNeverEndingContractHoldsNobody: a contract command that never ends
// (it ignores SIGTERM, here it just sleeps) takes the shared lock only, so
// another submission's command starts at once; a server-wide fault waits
// for it, as for any command. Only a contract command run with confinement
// off takes the exclusive lock, and then the other command waits.
func TestNeverEndingContractHoldsNobody(t *testing.T) {
	for _, tc := range []struct {
		lock    Lock
		blocked bool
	}{{LockShared, false}, {LockExclusive, true}} {
		t.Run(fmt.Sprint(tc.lock), func(t *testing.T) {
			var mu sync.RWMutex
			ctx, cancel := context.WithCancel(context.Background())
			started := make(chan struct{})
			done := make(chan *Record, 1)
			contract := spec(t, "contract", "sleep 30", time.Minute)
			contract.WantKeyless = true
			go func() {
				done <- Launch(ctx, contract, Opts{Lock: tc.lock, FaultLock: &mu, Progress: func() { close(started) }})
			}()
			<-started
			t0 := time.Now()
			other := make(chan *Record, 1)
			go func() {
				other <- Launch(context.Background(), spec(t, "reap", "true", time.Minute), Opts{Lock: LockShared, FaultLock: &mu})
			}()
			select {
			case r := <-other:
				require.False(t, tc.blocked, "the other command ran while an exclusive contract command held the server")
				require.NoError(t, r.Err)
				assert.Less(t, time.Since(t0), 3*time.Second, "the other command's start was not held")
				assert.False(t, mu.TryLock(), "a server-wide fault still waits for the running contract command")
			case <-time.After(3 * time.Second):
				require.True(t, tc.blocked, "a confined contract command held another submission's command for 3 s")
			}
			cancel() // the contract command ends (the subject runner stops it)
			r := <-done
			require.NotNil(t, r.Res)
			if tc.blocked {
				select {
				case r := <-other:
					require.NoError(t, r.Err)
				case <-time.After(10 * time.Second):
					t.Fatal("the other command never ran once the exclusive one ended")
				}
			}
		})
	}
}

// TestLaunchNotesTheBoxsKeylessRequests: with a guard on the lifecycle
// port, Launch makes it note the command's keyless requests (never the
// keyed ones, never the ones the guard refuses); without a guard for that
// port it changes nothing.
func TestLaunchNotesTheBoxsKeylessRequests(t *testing.T) {
	rec := &Record{WantKeyless: true}
	refuseAdmin := func(r *http.Request) string {
		if r.URL.Path == "/_mock/audit" {
			return "admin"
		}
		return ""
	}
	sp := &subject.Spec{Confine: &subject.Confinement{Guard: func(port int) func(*http.Request) string {
		if port == 8080 {
			return refuseAdmin
		}
		return nil
	}}}
	rec.watchKeyless(sp, 8080)
	require.True(t, rec.Boxed)
	g := sp.Confine.Guard(8080)
	keyed := httptest.NewRequest("GET", "/v1/sandboxes/x", nil)
	keyed.Header.Set(osb.HeaderAPIKey, "k")
	assert.Equal(t, "", g(keyed))
	assert.Equal(t, "", g(httptest.NewRequest("POST", "/v1/sandboxes", nil)))
	assert.Equal(t, "admin", g(httptest.NewRequest("GET", "/_mock/audit", nil)))
	assert.Nil(t, sp.Confine.Guard(9090), "other ports stay unguarded")
	k := rec.Keyless()
	require.Len(t, k, 1)
	assert.Equal(t, "POST", k[0].Method)
	assert.Equal(t, "/v1/sandboxes", k[0].Path)

	plain := &Record{WantKeyless: true}
	sp = &subject.Spec{Confine: &subject.Confinement{Guard: func(int) func(*http.Request) string { return nil }}}
	plain.watchKeyless(sp, 8080)
	assert.False(t, plain.Boxed, "no guard on the port: nothing is seen, the command is not boxed for this")
}

// TestKeylessAttributedByTheBox: two contract commands run at once on one
// server; each one's keyless calls are those its box saw it send, not the
// other's, whatever the time window. Without a box, every keyless call of
// its window is its own (it ran alone).
func TestKeylessAttributedByTheBox(t *testing.T) {
	t0 := time.Now()
	ev := func(d time.Duration, method, path string, status int) wire.Event {
		return wire.Event{Time: t0.Add(d), Kind: "lifecycle", Lifecycle: &wire.Lifecycle{Method: method, Path: path, Status: status}}
	}
	events := []wire.Event{
		ev(100*time.Millisecond, "POST", "/v1/sandboxes", 401),   // A's
		ev(200*time.Millisecond, "GET", "/v1/sandboxes/zz", 401), // B's
		ev(300*time.Millisecond, "DELETE", "/sandboxes/q", 401),  // B's
	}
	a := &Record{Boxed: true, Started: t0, Ended: t0.Add(time.Second)}
	a.keyless = []KeylessRequest{{Time: t0.Add(90 * time.Millisecond), Method: "POST", Path: "/v1/sandboxes"}}
	b := &Record{Boxed: true, Started: t0, Ended: t0.Add(time.Second)}
	b.keyless = []KeylessRequest{{Time: t0.Add(190 * time.Millisecond), Method: "GET", Path: "/v1/sandboxes/zz"},
		{Time: t0.Add(290 * time.Millisecond), Method: "DELETE", Path: "/v1/sandboxes/q"}}
	assert.Equal(t, events[:1], a.keylessOf(events))
	assert.Equal(t, events[1:], b.keylessOf(events))
	assert.Empty(t, (&Record{Boxed: true, Started: t0, Ended: t0.Add(time.Second)}).keylessOf(events), "a box that saw nothing owns nothing")
	late := &Record{Boxed: true}
	late.keyless = []KeylessRequest{{Time: t0.Add(-10 * time.Second), Method: "POST", Path: "/v1/sandboxes"}}
	assert.Empty(t, late.keylessOf(events), "a request long before the server's record is not that record")
	alone := &Record{Started: t0, Ended: t0.Add(250 * time.Millisecond)}
	assert.Equal(t, events[:2], alone.keylessOf(events), "unboxed: the window's keyless calls")

	// A command that was to run in a box but ran in none cannot be judged
	// on its keyless calls: a harness error, never the submission's.
	lost := &Record{WantKeyless: true, unattributed: true, Witness: Recorded{}}
	_, err := lost.Saw(context.Background())
	require.ErrorIs(t, err, errUnattributed)
}

// TestGraderFaultsAreHarnessErrors: the grader's own machine running out
// (descriptors, memory, disk) or failing to start a process is a harness
// error wherever it surfaces, even through Failf; the submission's own
// failures and a violation that is not the grader's stay what they are.
func TestGraderFaultsAreHarnessErrors(t *testing.T) {
	for _, err := range []error{
		&os.PathError{Op: "open", Path: "/x/out/summary.json", Err: syscall.EMFILE},
		fmt.Errorf("copying in: %w", &os.SyscallError{Syscall: "accept", Err: syscall.ENFILE}),
		fmt.Errorf("writing evidence: %w", syscall.ENOSPC),
		syscall.ENOMEM,
		&os.PathError{Op: "fork/exec", Path: "/usr/bin/bwrap", Err: syscall.EAGAIN},
	} {
		assert.NotEmpty(t, GraderFault(err), "%v", err)
		assert.True(t, IsHarnessFault(err), "%v", err)
		f := Failf("the harness could not start the run: %v", err)
		assert.True(t, IsHarnessFault(f), "Failf with a grader fault: %v", f)
		assert.True(t, IsHarnessFault(Failf("reading: %w", err)))
		assert.False(t, IsViolation(Violationf("leaked: %w", err)), "the grader's fault is nobody's violation")
	}
	for _, err := range []error{
		errors.New("summary.json is missing"),
		&os.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT},
		fmt.Errorf("exit status 1"),
	} {
		assert.Empty(t, GraderFault(err), "%v", err)
		assert.False(t, IsHarnessFault(Failf("%v", err)))
	}
	assert.True(t, IsViolation(Violationf("sent the key out")))
	assert.True(t, IsHarnessFault(Harnessf("audit answered 500")))
}
