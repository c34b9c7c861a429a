package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/classreport"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// gradeMain is `acceptance grade DIR...`: each DIR is a submission with a
// capstone.yaml manifest at its root (a pattern such as 'subs/*' is expanded).
// Several are graded at once, sharing one bundled server and the stubs, each
// isolated by its own API keys and data-API token. One bundle per submission;
// with more than one, a class summary. A broken submission never stops the
// others.
func gradeMain(args []string, stdout, stderr io.Writer) int {
	return gradeWith(args, stdout, stderr, sessionHooks{})
}

// sessionHooks are a test's seams into the grading session, handed to one
// grade call (never package state); grading itself sets none.
type sessionHooks struct {
	stubsStarted func(upstreams map[string]string) // core.Config.StubsStarted
}

// gradeWith is gradeMain with a test's hooks.
func gradeWith(args []string, stdout, stderr io.Writer, hooks sessionHooks) int {
	cfg, dirs, err := parseFlags("grade", args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "acceptance grade: %s\n", inert.Line(err.Error()))
		return 2
	}
	cfg.stubsStarted = hooks.stubsStarted
	dirs, err = expandDirs(dirs)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance grade: %s\n", inert.Line(err.Error()))
		return 2
	}
	if len(dirs) == 0 {
		fmt.Fprintf(stderr, "acceptance grade: name at least one submission directory (with %s at its root)\n", submission.ManifestName)
		return 2
	}
	// pos[i] is dirs[i]'s position in the whole list: its bundle's number,
	// the same whether it is graded in one call or in a shard.
	pos := make([]int, len(dirs))
	for i := range dirs {
		pos[i] = i
	}
	if cfg.shard != "" {
		sh, _ := submission.ParseShard(cfg.shard) // validated by parseFlags
		all := len(dirs)
		var kept []string
		var keptPos []int
		for i, d := range dirs {
			if sh.Holds(submission.Identity(d)) {
				kept, keptPos = append(kept, d), append(keptPos, i)
			}
		}
		dirs, pos = kept, keptPos
		fmt.Fprintf(stdout, "acceptance grade: shard %s holds %d of the %d submission(s)\n", sh, len(dirs), all)
		if len(dirs) == 0 {
			// An empty share is not an error (a small class on a wide matrix):
			// its --out exists, empty, for the merge to read.
			if cfg.out != "" {
				if err := os.MkdirAll(cfg.out, 0o755); err != nil {
					fmt.Fprintf(stderr, "acceptance grade: %s\n", inert.Line(err.Error()))
					return 2
				}
			}
			return 0
		}
	}
	// Manifests are read before anything starts: a class whose every
	// manifest is broken is the command line's problem (exit 2).
	members := make([]classMember, len(dirs))
	loaded := 0
	for i, d := range dirs {
		m := &members[i]
		m.dir, m.pos = d, pos[i]
		if m.sub, m.loadErr = submission.Load(d); m.loadErr == nil {
			loaded++
		} else {
			fmt.Fprintf(stderr, "acceptance grade: %s\n", inert.Line(m.loadErr.Error()))
		}
	}
	if loaded == 0 {
		fmt.Fprintf(stderr, "acceptance grade: no submission could be loaded\n")
		return 2
	}
	if refused := classConfinement(cfg, len(dirs)); refused != "" {
		fmt.Fprintf(stderr, "acceptance grade: %s\n", refused)
		return 2
	}
	if err := checkURLTarget(context.Background(), cfg); err != nil {
		fmt.Fprintf(stderr, "acceptance grade: %s\n", inert.Line(err.Error()))
		return 2
	}
	if err := checkWheels(cfg); err != nil {
		fmt.Fprintf(stderr, "acceptance grade: %s\n", inert.Line(err.Error()))
		return 2
	}
	out := cfg.out
	if out == "" {
		out = filepath.Join("reports", time.Now().UTC().Format("20060102T150405Z")+"-"+randomHex(3))
	}
	if out, err = filepath.Abs(out); err != nil {
		fmt.Fprintf(stderr, "acceptance grade: --out: %s\n", inert.Line(err.Error()))
		return 2
	}
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		fmt.Fprintf(stderr, "acceptance grade: --out %s already holds files; a class run needs an empty or new directory\n", inert.Line(out))
		return 2
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintf(stderr, "acceptance grade: %s\n", inert.Line(err.Error()))
		return 2
	}
	if err := closeOut(cfg, out); err != nil {
		fmt.Fprintf(stderr, "acceptance grade: %s\n", inert.Line(err.Error()))
		return 2
	}
	if cfg.out == "" {
		linkLatest(out)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sess, code := openSession(ctx, "grade", cfg, stderr)
	if sess == nil {
		return code
	}
	defer sess.Close()
	sess.SetShared(len(dirs) > 1 && cfg.parallel > 1)
	reportPreflight(stdout, sess)
	fmt.Fprintf(stdout, "acceptance grade: %d submission(s), target %s, seed %d, %d at once, reports in %s\n",
		len(dirs), targetName(cfg), cfg.seed, min(cfg.parallel, len(dirs)), out)

	prog := newGradeProgress(stdout, len(dirs), cfg.verbose)
	prog.out.Start(time.Second)
	results := gradeAll(ctx, gradeJob{sess: sess, members: members, out: out, parallel: cfg.parallel, prog: prog})
	prog.out.Close()
	var bundles []string
	worst := 0
	for _, r := range results {
		line := ""
		switch {
		case r.loadErr != nil:
			line = fmt.Sprintf("%-40s not graded: %s", inert.Line(r.dir), inert.Line(r.loadErr.Error()))
			worst = worseExit(worst, 2)
		case r.g.Doc.RunID == "":
			line = fmt.Sprintf("%-40s harness error: %s", inert.Line(r.dir), inert.Line(fmt.Sprint(r.g.Err)))
			worst = worseExit(worst, 2)
		default:
			// A submission's escaped process may have rewritten its report
			// after the grader wrote it: what counts is the grader's record.
			if changed, err := report.Reassert(r.g.Dir, r.g.Doc); len(changed) > 0 {
				note := "written again from the grader's record"
				if err != nil {
					note += " (" + err.Error() + ")"
				}
				fmt.Fprintf(stdout, "%s: %s changed after the grader wrote it; %s\n", inert.Line(r.g.Dir), inert.Line(strings.Join(changed, ", ")), inert.Line(note))
			}
			bundles = append(bundles, r.g.Dir)
			line = fmt.Sprintf("%-40s %s", inert.Line(r.dir), report.SummaryLine(r.g.Doc))
			worst = worseExit(worst, r.g.Doc.ExitCode)
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

// worseExit keeps the exit code that matters most: graded failures (1), then
// harness errors (2), then incomplete (3), then passed (0).
func worseExit(a, b int) int {
	rank := map[int]int{0: 0, 3: 1, 2: 2, 1: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

type gradeResult struct {
	dir     string
	loadErr error
	g       core.Graded
}

// classMember is one submission directory of the class being graded.
type classMember struct {
	dir     string                 // as named on the command line
	pos     int                    // its position in the whole class: its bundle's number, the same in a shard
	sub     *submission.Submission // nil when loadErr is set
	loadErr error                  // its manifest could not be read: it is reported, not graded
}

// gradeJob is what gradeAll grades, and with what.
type gradeJob struct {
	sess     *core.Session
	members  []classMember
	out      string // the class's directory; each bundle goes below it
	parallel int    // how many submissions are graded at once
	prog     *gradeProgress
}

// gradeAll grades each member of the class, job.parallel at once. A
// submission that cannot be loaded or graded is reported and the others go
// on. Each submission's line is printed as it finishes; its per-scenario
// lines go to its bundle's progress.log (and to the output with --verbose).
func gradeAll(ctx context.Context, job gradeJob) []gradeResult {
	sess, out, prog := job.sess, job.out, job.prog
	results := make([]gradeResult, len(job.members))
	sem := make(chan struct{}, job.parallel)
	var wg sync.WaitGroup
	for i, m := range job.members {
		results[i].dir = m.dir
		if m.loadErr != nil {
			results[i].loadErr = m.loadErr
			prog.Finished(inert.Line(m.dir), fmt.Sprintf("%s not graded: %s", inert.Line(m.dir), inert.Line(m.loadErr.Error())), "", false)
			continue
		}
		wg.Add(1)
		go func(i int, m classMember) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			sub := m.sub
			label := core.SubmissionLabel(sub, m.pos)
			bundle := filepath.Join(out, label)
			log := &lazyLog{path: filepath.Join(bundle, ProgressLogFile)}
			defer func() {
				log.Close()
				g := results[i].g
				switch {
				case g.Doc.RunID == "":
					prog.Finished(label, fmt.Sprintf("%s harness error: %s", label, inert.Line(fmt.Sprint(g.Err))), "", false)
				default:
					prog.Finished(label, fmt.Sprintf("%s %s", label, report.SummaryLine(g.Doc)), g.Doc.Verdict, true)
				}
			}()
			defer func() {
				if r := recover(); r != nil {
					results[i].g.Err = fmt.Errorf("grading panicked: %v", r)
				}
			}()
			prog.Started(label, consoleName(sub, label), inert.Line(bundle))
			results[i].g = sess.Grade(ctx, sub, bundle, newSuite, prog.Scenarios(label, log))
		}(i, m)
	}
	wg.Wait()
	return results
}

// consoleName is how a submission is introduced on the console: its label
// (its position in the class and its directory, core.SubmissionLabel), and
// the name its manifest gives it, when that differs, as the student's text:
// quoted and escaped (harness/inert). Two submissions never share a label,
// whatever their manifests call them (a manifest may call itself
// "reference").
func consoleName(sub *submission.Submission, label string) string {
	if n := sub.Manifest.Name; n != "" && n != submission.Identity(sub.Dir) {
		return label + " (its manifest's name: " + inert.Quote(n) + ")"
	}
	return label
}

// expandDirs expands patterns (for shells that left them unexpanded), keeps
// the order given and drops duplicates.
func expandDirs(args []string) ([]string, error) {
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

// prefixWriter prefixes each line with the submission's name (progress of
// submissions graded at once interleaves).
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	lines := strings.SplitAfter(string(b), "\n")
	var sb strings.Builder
	for _, l := range lines {
		if l != "" {
			sb.WriteString(p.prefix + l)
		}
	}
	if _, err := p.w.Write([]byte(sb.String())); err != nil {
		return 0, err
	}
	return len(b), nil
}
