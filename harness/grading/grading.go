// Package grading grades a class: the submission directories named to
// `acceptance grade`, each loaded from its manifest, graded by one
// core.Session a few at once, and summed up (a line each, the exit code that
// matters most, the class summary). A broken submission never stops the
// others: a manifest that cannot be read is reported, not graded; a grade
// that panics is that submission's harness error.
//
// cmd/acceptance parses the flags, opens the session and draws the progress;
// this package owns what happens to the class between those.
package grading

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/classreport"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// Progress is what grading tells the console about each submission
// (cmd/acceptance's gradeProgress).
type Progress interface {
	// Started: a submission is being graded now. label names it (unique in
	// the class), shown introduces it, bundle is where its reports go.
	Started(label, shown, bundle string)
	// Finished: its line (verdict and score, or why it was not graded).
	Finished(label, line string, verdict rubric.Overall, graded bool)
	// Scenarios is where its per-scenario lines go, given its progress.log.
	Scenarios(label string, log io.Writer) io.Writer
}

// Member is one submission directory of the class being graded.
type Member struct {
	Dir     string                 // as named on the command line
	Pos     int                    // its position in the whole class: its bundle's number, the same in a shard
	Sub     *submission.Submission // nil when LoadErr is set
	LoadErr error                  // its manifest could not be read: it is reported, not graded
}

// Result is one member's outcome.
type Result struct {
	Dir     string
	LoadErr error
	G       core.Graded
}

// Job is what All grades, and with what.
type Job struct {
	Sess     *core.Session
	Members  []Member
	Out      string // the class's directory; each bundle goes below it
	Parallel int    // how many submissions are graded at once
	Prog     Progress
	Suite    core.SuiteFactory
}

// Shard keeps the directories a shard holds, with their positions in the
// whole list (pos[i] is kept[i]'s bundle number, the same whether it is
// graded in one call or in a shard).
func Shard(dirs []string, sh submission.Shard) (kept []string, pos []int) {
	for i, d := range dirs {
		if sh.Holds(submission.Identity(d)) {
			kept, pos = append(kept, d), append(pos, i)
		}
	}
	return kept, pos
}

// Load reads each directory's manifest, before anything starts; a manifest
// that cannot be read is reported on stderr and its member is not graded.
// loaded counts the members that can be graded.
func Load(dirs []string, pos []int, stderr io.Writer) (members []Member, loaded int) {
	members = make([]Member, len(dirs))
	for i, d := range dirs {
		m := &members[i]
		m.Dir, m.Pos = d, pos[i]
		if m.Sub, m.LoadErr = submission.Load(d); m.LoadErr == nil {
			loaded++
		} else {
			fmt.Fprintf(stderr, "acceptance grade: %s\n", inert.Line(m.LoadErr.Error()))
		}
	}
	return members, loaded
}

// All grades each member of the class, job.Parallel at once. A
// submission that cannot be loaded or graded is reported and the others go
// on. Each submission's line is printed as it finishes; its per-scenario
// lines go to its bundle's progress.log (and to the output with --verbose).
func All(ctx context.Context, job Job) []Result {
	sess, out, prog := job.Sess, job.Out, job.Prog
	results := make([]Result, len(job.Members))
	sem := make(chan struct{}, job.Parallel)
	var wg sync.WaitGroup
	for i, m := range job.Members {
		results[i].Dir = m.Dir
		if m.LoadErr != nil {
			results[i].LoadErr = m.LoadErr
			prog.Finished(inert.Line(m.Dir), fmt.Sprintf("%s not graded: %s", inert.Line(m.Dir), inert.Line(m.LoadErr.Error())), "", false)
			continue
		}
		wg.Add(1)
		go func(i int, m Member) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sub := m.Sub
			label := core.SubmissionLabel(sub, m.Pos)
			bundle := filepath.Join(out, label)
			log := NewLazyLog(filepath.Join(bundle, ProgressLogFile))
			defer func() {
				log.Close()
				g := results[i].G
				switch {
				case g.Doc.RunID == "":
					prog.Finished(label, fmt.Sprintf("%s harness error: %s", label, inert.Line(fmt.Sprint(g.Err))), "", false)
				default:
					prog.Finished(label, fmt.Sprintf("%s %s", label, report.SummaryLine(g.Doc)), g.Doc.Verdict, true)
				}
			}()
			defer func() {
				if r := recover(); r != nil {
					results[i].G.Err = fmt.Errorf("grading panicked: %v", r)
				}
			}()
			prog.Started(label, ConsoleName(sub, label), inert.Line(bundle))
			results[i].G = sess.Grade(ctx, sub, bundle, job.Suite, prog.Scenarios(label, log))
		}(i, m)
	}
	wg.Wait()
	return results
}

// Summarize prints each result's line and, for more than one, writes the
// class summary into out. It returns the exit code that matters most.
func Summarize(results []Result, out string, stdout, stderr io.Writer) int {
	var bundles []string
	worst := 0
	for _, r := range results {
		line := ""
		switch {
		case r.LoadErr != nil:
			line = fmt.Sprintf("%-40s not graded: %s", inert.Line(r.Dir), inert.Line(r.LoadErr.Error()))
			worst = WorseExit(worst, 2)
		case r.G.Doc.RunID == "":
			line = fmt.Sprintf("%-40s harness error: %s", inert.Line(r.Dir), inert.Line(fmt.Sprint(r.G.Err)))
			worst = WorseExit(worst, 2)
		default:
			// A submission's escaped process may have rewritten its report
			// after the grader wrote it: what counts is the grader's record.
			if changed, err := report.Reassert(r.G.Dir, r.G.Doc); len(changed) > 0 {
				note := "written again from the grader's record"
				if err != nil {
					note += " (" + err.Error() + ")"
				}
				fmt.Fprintf(stdout, "%s: %s changed after the grader wrote it; %s\n", inert.Line(r.G.Dir), inert.Line(strings.Join(changed, ", ")), inert.Line(note))
			}
			bundles = append(bundles, r.G.Dir)
			line = fmt.Sprintf("%-40s %s", inert.Line(r.Dir), report.SummaryLine(r.G.Doc))
			worst = WorseExit(worst, r.G.Doc.ExitCode)
		}
		fmt.Fprintln(stdout, line)
	}
	if len(results) > 1 {
		if err := classreport.WriteClassSummary(out, bundles); err != nil {
			fmt.Fprintf(stderr, "acceptance grade: class summary not written: %s\n", inert.Line(err.Error()))
		} else {
			fmt.Fprintf(stdout, "class summary: %s\n", filepath.Join(out, "class.md"))
		}
	}
	return worst
}

// WorseExit keeps the exit code that matters most: graded failures (1), then
// harness errors (2), then incomplete (3), then passed (0).
func WorseExit(a, b int) int {
	rank := map[int]int{0: 0, 3: 1, 2: 2, 1: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// ConsoleName is how a submission is introduced on the console: its label
// (its position in the class and its directory, core.SubmissionLabel), and
// the name its manifest gives it, when that differs, as the student's text:
// quoted and escaped (harness/inert). Two submissions never share a label,
// whatever their manifests call them (a manifest may call itself
// "reference").
func ConsoleName(sub *submission.Submission, label string) string {
	if n := sub.Manifest.Name; n != "" && n != submission.Identity(sub.Dir) {
		return label + " (its manifest's name: " + inert.Quote(n) + ")"
	}
	return label
}

// ExpandDirs expands patterns (for shells that left them unexpanded), keeps
// the order given and drops duplicates.
func ExpandDirs(args []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, a := range args {
		matches := []string{a}
		if strings.ContainsAny(a, "*?[") {
			m, err := filepath.Glob(a)
			if err != nil {
				return nil, fmt.Errorf("pattern %q: %v", a, err)
			}
			if len(m) == 0 {
				return nil, fmt.Errorf("pattern %q matches nothing", a)
			}
			sort.Strings(m)
			matches = m
		}
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && !st.IsDir() {
				continue // a pattern like subs/* may match files beside the directories
			}
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// ProgressLogFile is each bundle's log of its per-scenario lines.
const ProgressLogFile = "progress.log"

// LazyLog appends to a file opened at the first write: the bundle's
// directory is created by report.Open inside the grade, and must be empty
// until then. A line that cannot be written is dropped (the log is a copy
// of what the journal and godog.log hold); the grade goes on.
type LazyLog struct {
	mu   sync.Mutex
	path string
	f    *os.File
	err  error
}

// NewLazyLog is a LazyLog of the file at path.
func NewLazyLog(path string) *LazyLog { return &LazyLog{path: path} }

func (l *LazyLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	}
	if l.f != nil {
		l.f.Write(b)
	}
	return len(b), nil
}

// Close closes the file, if it was opened.
func (l *LazyLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		return l.f.Close()
	}
	return nil
}
