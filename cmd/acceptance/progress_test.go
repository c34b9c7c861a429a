package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/grading"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// fakeClock advances only when told.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// gradeSequence plays a class of three through p: alice passes after 1
// minute, bob fails after 2 (both running at once), carol is not graded.
func gradeSequence(p *gradeProgress, clock *fakeClock, scenarioLine string) {
	p.Started("alice", "alice", "/class/01-alice")
	p.Started("bob", "bob", "/class/02-bob")
	if w := p.Scenarios("bob", io.Discard); w != nil {
		io.WriteString(w, scenarioLine)
	}
	clock.add(time.Minute)
	p.Finished("alice", "alice PASSED 80/100", rubric.OverallPassed, true)
	clock.add(time.Minute)
	p.Finished("bob", "bob NOT PASSED 10/100", rubric.OverallNotPassed, true)
	p.Finished("carol", "carol not graded: no capstone.yaml", "", false)
}

// Not a terminal (a CI log): one line per submission as it finishes and the
// status as a plain line after it, never a control code; the per-scenario
// lines only with --verbose.
func TestGradeProgressPlain(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	var buf bytes.Buffer
	p := newGradeProgress(&buf, 3, false)
	p.now, p.start = clock.now, clock.now()
	require.False(t, p.terminal())
	p.out.Start(time.Millisecond) // no ticker without a terminal
	gradeSequence(p, clock, "failed        M0 contract  [M0]\n")
	p.out.Close()
	out := buf.String()
	assert.NotContains(t, out, "\x1b")
	assert.NotContains(t, out, "\r")
	assert.Equal(t, `grading alice → /class/01-alice
grading bob → /class/02-bob
[1/3] alice PASSED 80/100
progress: 1/3 done · 1m0s elapsed · about 2m0s left · passed 1 · not passed 0 · incomplete 0 · running 1: bob
[2/3] bob NOT PASSED 10/100
progress: 2/3 done · 2m0s elapsed · about 1m0s left · passed 1 · not passed 1 · incomplete 0
[3/3] carol not graded: no capstone.yaml
progress: 3/3 done · 2m0s elapsed · done · passed 1 · not passed 1 · incomplete 0 · not graded 1
`, out)

	buf.Reset()
	p = newGradeProgress(&buf, 3, true)
	p.now, p.start = clock.now, clock.now()
	gradeSequence(p, clock, "failed        M0 contract  [M0]\n")
	assert.Contains(t, buf.String(), "bob: failed        M0 contract  [M0]\n", "--verbose: the scenario lines, prefixed")
}

// readAll collects what the terminal shows until the writer side is closed.
func readPTY(t *testing.T, master *os.File) func() string {
	var mu sync.Mutex
	var got bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			mu.Lock()
			got.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return func() string {
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		mu.Lock()
		defer mu.Unlock()
		return got.String()
	}
}

// On a terminal (a pseudo-terminal here): the finished lines, and one status
// line kept below them, redrawn in place; the per-scenario lines stay off
// the terminal (they are in each bundle's progress.log).
func TestGradeProgressTerminal(t *testing.T) {
	master, tty, err := pty.Open()
	require.NoError(t, err)
	defer master.Close()
	require.NoError(t, pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 200}))
	read := readPTY(t, master)

	clock := &fakeClock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	p := newGradeProgress(tty, 3, false)
	p.now, p.start = clock.now, clock.now()
	require.True(t, p.terminal(), "a pty is a terminal")
	gradeSequence(p, clock, "failed        M0 contract  [M0]\n")
	p.out.Close()
	tty.Close()
	out := read()

	assert.Contains(t, out, "\r\x1b[K0/3 done · 0s elapsed · estimating the time left · passed 0 · not passed 0 · incomplete 0 · running 2: alice, bob")
	assert.Contains(t, out, "\r\x1b[K[1/3] alice PASSED 80/100\r\n\r\x1b[K1/3 done · 1m0s elapsed · about 2m0s left · passed 1 · not passed 0 · incomplete 0 · running 1: bob")
	assert.Contains(t, out, "[2/3] bob NOT PASSED 10/100")
	assert.Contains(t, out, "3/3 done · 2m0s elapsed · done · passed 1 · not passed 1 · incomplete 0 · not graded 1")
	assert.NotContains(t, out, "M0 contract", "per-scenario lines stay off the terminal without --verbose")
	assert.NotContains(t, out, "grading alice", "the status line says what runs")
	assert.True(t, strings.HasSuffix(out, "\r\x1b[K"), "Close erases the status line: %q", out[max(0, len(out)-80):])
}

// A status line wider than the terminal is cut to one line (a wrapped one
// could not be redrawn in place).
func TestStatusLineFitsTheTerminal(t *testing.T) {
	master, tty, err := pty.Open()
	require.NoError(t, err)
	defer master.Close()
	require.NoError(t, pty.Setsize(tty, &pty.Winsize{Rows: 40, Cols: 30}))
	read := readPTY(t, master)
	s := newStatusLine(tty, func() string { return strings.Repeat("x", 100) })
	s.Refresh()
	tty.Close()
	out := read()
	assert.Contains(t, out, "\r\x1b[K"+strings.Repeat("x", 28)+"…")
	assert.NotContains(t, out, strings.Repeat("x", 29))
}

// `run` on a terminal: its per-scenario lines as before, and a status line
// counting the scenarios the tags select.
func TestRunProgressTerminal(t *testing.T) {
	master, tty, err := pty.Open()
	require.NoError(t, err)
	defer master.Close()
	read := readPTY(t, master)
	p := newRunProgress(tty, 2)
	io.WriteString(p, "  … running the subject on sales\n")
	io.WriteString(p, "passed        M0 contract  [M0]\n")
	io.WriteString(p, "failed        an answer  [M2]\n  the answer was wrong\n")
	p.out.Close()
	tty.Close()
	out := read()
	assert.Contains(t, out, "passed        M0 contract  [M0]\r\n\r\x1b[K1/2 scenarios done · ")
	assert.Contains(t, out, "  the answer was wrong\r\n\r\x1b[K2/2 scenarios done · ")

	var buf bytes.Buffer
	p = newRunProgress(&buf, 2)
	io.WriteString(p, "passed        M0 contract  [M0]\n")
	p.out.Close()
	assert.Equal(t, "passed        M0 contract  [M0]\n", buf.String(), "not a terminal: the lines alone")
}

// The scenario total `run` counts toward is godog's selection.
func TestCountScenarios(t *testing.T) {
	all := countScenarios("")
	m0 := countScenarios("@milestone:M0")
	notLarge := countScenarios("~@large")
	assert.Greater(t, all, 20)
	assert.Greater(t, m0, 0)
	assert.Less(t, notLarge, all, "some scenarios are @large")
	assert.Equal(t, m0+countScenarios("@drill:D5")-countScenarios("@milestone:M0&&@drill:D5"), countScenarios("@milestone:M0,@drill:D5"))
	assert.Equal(t, 0, countScenarios("@milestone:M0&&~@milestone:M0"))
	assert.Equal(t, 2, scenarioLines("passed        a  [M0]\n  … running\nfailed        b  [M1]\n  reason\n"))
	assert.Equal(t, 0, scenarioLines("failed        egress of run sales  [network]\n              reason\nfailed        secret scan of run sales  [credential, M3]\n"), "lines about a run, not a scenario")
}

// Each bundle's progress.log is opened at its first line: the bundle's
// directory must be empty until report.Open.
func TestLazyLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "bundle")
	l := grading.NewLazyLog(filepath.Join(dir, ProgressLogFile))
	require.NoError(t, l.Close())
	_, err := os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "nothing created before the first line")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	io.WriteString(l, "passed  a\n")
	io.WriteString(l, "failed  b\n")
	require.NoError(t, l.Close())
	b, err := os.ReadFile(filepath.Join(dir, ProgressLogFile))
	require.NoError(t, err)
	assert.Equal(t, "passed  a\nfailed  b\n", string(b))
}
