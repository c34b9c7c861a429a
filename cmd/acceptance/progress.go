package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
	"golang.org/x/term"

	"github.com/osb-capstone/acceptance/features"
	"github.com/osb-capstone/acceptance/harness/grading"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// statusLine prints lines to w and, when w is a terminal, keeps one status
// line below them, redrawn in place ("\r", erase line) as lines are printed
// and every second. When w is not a terminal (a CI log, a file, a pipe) it
// prints only the lines it is given, never a control code.
type statusLine struct {
	mu     sync.Mutex
	w      io.Writer
	tty    bool
	width  int              // columns of the terminal (0: unknown)
	status func() string    // the status text; called with mu held
	fd     int              // the terminal's descriptor, for its width
	shown  bool             // a status line is on screen
	stop   chan struct{}    // ends the ticker
	ticker *sync.WaitGroup  // the ticker goroutine
	now    func() time.Time // the clock (tests)
}

// terminalOf reports whether w is a terminal, and its descriptor.
func terminalOf(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	return fd, term.IsTerminal(fd)
}

func newStatusLine(w io.Writer, status func() string) *statusLine {
	s := &statusLine{w: w, status: status, now: time.Now}
	s.fd, s.tty = terminalOf(w)
	if s.tty {
		if cols, _, err := term.GetSize(s.fd); err == nil {
			s.width = cols
		}
	}
	return s
}

// Start draws the status line, then redraws it every interval (terminal
// only).
func (s *statusLine) Start(interval time.Duration) {
	if !s.tty {
		return
	}
	s.Refresh()
	s.stop = make(chan struct{})
	s.ticker = &sync.WaitGroup{}
	s.ticker.Add(1)
	go func() {
		defer s.ticker.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				s.Refresh()
			}
		}
	}()
}

// Close stops the ticker and erases the status line, leaving the printed
// lines (a finished command says its outcome in lines of its own).
func (s *statusLine) Close() {
	if s.stop != nil {
		close(s.stop)
		s.ticker.Wait()
		s.stop = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
}

func (s *statusLine) clear() {
	if s.tty && s.shown {
		io.WriteString(s.w, "\r\x1b[K")
		s.shown = false
	}
}

func (s *statusLine) draw() {
	if !s.tty || s.status == nil {
		return
	}
	if cols, _, err := term.GetSize(s.fd); err == nil {
		s.width = cols
	}
	text := s.status()
	// One screen line: a wrapped status line could not be redrawn in place.
	if s.width > 1 && utf8.RuneCountInString(text) > s.width-1 {
		r := []rune(text)
		text = string(r[:s.width-2]) + "…"
	}
	io.WriteString(s.w, "\r\x1b[K"+text)
	s.shown = true
}

// Refresh redraws the status line (terminal only).
func (s *statusLine) Refresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	s.draw()
}

// Print writes text (one or more lines) above the status line.
func (s *statusLine) Print(text string) {
	if text == "" {
		return
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear()
	io.WriteString(s.w, text)
	s.draw()
}

// Write is Print: the status line as an io.Writer (each Write is whole
// lines: the progress lines of steps and core are).
func (s *statusLine) Write(p []byte) (int, error) {
	s.Print(string(p))
	return len(p), nil
}

// gradeProgress is `acceptance grade`'s live progress: a line per
// submission as it finishes; on a terminal a status line with done/total,
// the submissions running now, elapsed time, an estimate of the time left,
// and the verdicts so far; in a plain log the same status as a line after
// each finished submission.
type gradeProgress struct {
	out     *statusLine
	verbose bool
	now     func() time.Time

	mu                               sync.Mutex
	total, done                      int
	start                            time.Time
	running                          []string
	passed, notPassed, incompl, errs int
}

func newGradeProgress(w io.Writer, total int, verbose bool) *gradeProgress {
	p := &gradeProgress{total: total, verbose: verbose, now: time.Now}
	p.start = p.now()
	p.out = newStatusLine(w, p.status)
	return p
}

// terminal reports whether the progress draws a status line.
func (p *gradeProgress) terminal() bool { return p.out.tty }

func (p *gradeProgress) status() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	elapsed := p.now().Sub(p.start)
	left := "estimating the time left"
	if p.done > 0 && p.done < p.total {
		left = "about " + shortDuration(elapsed/time.Duration(p.done)*time.Duration(p.total-p.done)) + " left"
	} else if p.done >= p.total {
		left = "done"
	}
	s := fmt.Sprintf("%d/%d done · %s elapsed · %s · passed %d · not passed %d · incomplete %d", p.done, p.total, shortDuration(elapsed), left, p.passed, p.notPassed, p.incompl)
	if p.errs > 0 {
		s += fmt.Sprintf(" · not graded %d", p.errs)
	}
	if len(p.running) > 0 {
		s += fmt.Sprintf(" · running %d: %s", len(p.running), strings.Join(p.running, ", "))
	}
	return s
}

// Started marks a submission as being graded now.
// label names it in the status line (unique in the class), shown
// introduces it in the "grading" line (the label and its manifest's name).
func (p *gradeProgress) Started(label, shown, bundle string) {
	p.mu.Lock()
	p.running = append(p.running, label)
	p.mu.Unlock()
	if p.terminal() && !p.verbose {
		p.out.Refresh()
		return
	}
	p.out.Print(fmt.Sprintf("grading %s → %s", shown, bundle))
}

// Finished prints the submission's line (its verdict and score, or why it
// was not graded) and the status after it.
func (p *gradeProgress) Finished(name, line string, verdict rubric.Overall, graded bool) {
	p.mu.Lock()
	for i, r := range p.running {
		if r == name {
			p.running = append(p.running[:i], p.running[i+1:]...)
			break
		}
	}
	p.done++
	switch {
	case !graded:
		p.errs++
	case verdict == rubric.OverallPassed:
		p.passed++
	case verdict == rubric.OverallNotPassed:
		p.notPassed++
	default:
		p.incompl++
	}
	n := fmt.Sprintf("[%*d/%d] ", len(fmt.Sprint(p.total)), p.done, p.total)
	p.mu.Unlock()
	if p.terminal() {
		p.out.Print(n + line)
		return
	}
	p.out.Print(n + line + "\nprogress: " + p.status())
}

// Scenarios is where a submission's per-scenario lines go: its bundle's
// progress.log, and with --verbose the output too, prefixed by its name.
func (p *gradeProgress) Scenarios(name string, log io.Writer) io.Writer {
	if !p.verbose {
		return log
	}
	return io.MultiWriter(log, &prefixWriter{w: p.out, prefix: name + ": "})
}

// shortDuration renders 75s as "1m15s", 3700s as "1h1m".
func shortDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return d.String()
}

// ProgressLogFile is each bundle's log of its per-scenario lines.
const ProgressLogFile = grading.ProgressLogFile

// runProgress is `acceptance run`'s: its per-scenario lines as before, and
// on a terminal a status line with scenarios done/total and elapsed time.
type runProgress struct {
	out   *statusLine
	now   func() time.Time
	start time.Time

	mu          sync.Mutex
	total, done int
}

func newRunProgress(w io.Writer, total int) *runProgress {
	p := &runProgress{total: total, now: time.Now}
	p.start = p.now()
	p.out = newStatusLine(w, p.status)
	return p
}

func (p *runProgress) status() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("%d/%d scenarios done · %s elapsed", p.done, p.total, shortDuration(p.now().Sub(p.start)))
}

// Write passes the progress lines on and counts the finished scenarios.
func (p *runProgress) Write(b []byte) (int, error) {
	n := scenarioLines(string(b))
	if n > 0 {
		p.mu.Lock()
		p.done = min(p.done+n, max(p.total, p.done)) // never past the total the tags select
		p.mu.Unlock()
	}
	p.out.Print(string(b))
	return len(b), nil
}

// notScenarios start the verdict lines the steps print about a whole run,
// not a scenario (steps/attribution.go, steps/scan.go).
var notScenarios = []string{"egress of run ", "secret scan of run "}

// scenarioLines counts the lines that say a scenario finished: the steps
// print each as its verdict, padded, then the scenario's name.
func scenarioLines(s string) int {
	n := 0
lines:
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || strings.HasPrefix(l, " ") {
			continue
		}
		for _, p := range notScenarios {
			if strings.HasPrefix(strings.TrimSpace(strings.TrimPrefix(l, f[0])), p) {
				continue lines
			}
		}
		switch rubric.Verdict(f[0]) {
		case rubric.Passed, rubric.Failed, rubric.NotMeasured, rubric.HarnessError, rubric.Flaky:
			n++
		}
	}
	return n
}

// countScenarios is the number of scenarios (pickles) the tag expression
// selects, with godog's rules: "," is or, "&&" is and, "~" is not.
func countScenarios(tags string) int {
	files, err := fs.Glob(features.FS, "*.feature")
	if err != nil {
		return 0
	}
	n := 0
	for _, name := range files {
		f, err := features.FS.Open(name)
		if err != nil {
			continue
		}
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(f, ids.NewId)
		f.Close()
		if err != nil || doc.Feature == nil {
			continue
		}
		for _, p := range gherkin.Pickles(*doc, name, ids.NewId) {
			if tagsMatch(tags, p.Tags) {
				n++
			}
		}
	}
	return n
}

func tagsMatch(expr string, tags []*messages.PickleTag) bool {
	if strings.TrimSpace(expr) == "" {
		return true
	}
	has := func(t string) bool {
		for _, pt := range tags {
			if strings.TrimPrefix(pt.Name, "@") == t {
				return true
			}
		}
		return false
	}
	for _, or := range strings.Split(expr, ",") {
		all := true
		for _, term := range strings.Split(or, "&&") {
			term = strings.TrimSpace(term)
			neg := strings.HasPrefix(term, "~")
			t := strings.TrimPrefix(strings.TrimPrefix(term, "~"), "@")
			if has(t) == neg {
				all = false
			}
		}
		if all {
			return true
		}
	}
	return false
}
