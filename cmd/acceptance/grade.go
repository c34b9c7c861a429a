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
	"strings"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/harness/grading"
	"github.com/osb-capstone/acceptance/harness/inert"
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
	dirs, err = grading.ExpandDirs(dirs)
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
		dirs, pos = grading.Shard(dirs, sh)
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
	members, loaded := grading.Load(dirs, pos, stderr)
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
	if err := refuseAuthOffTarget(context.Background(), cfg); err != nil {
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
	results := grading.All(ctx, grading.Job{Sess: sess, Members: members, Out: out, Parallel: cfg.parallel, Prog: prog, Suite: newSuite})
	prog.out.Close()
	return grading.Summarize(results, out, stdout, stderr)
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
