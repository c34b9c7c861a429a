package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/harness/dockertarget"
	"github.com/osb-capstone/acceptance/harness/report/compare"
	"github.com/osb-capstone/acceptance/harness/upgradecheck"
)

// upgradeCheckMain is `acceptance upgrade-check --from A --to B`: its flags
// and wiring. The runs and their judgement are harness/upgradecheck's.
func upgradeCheckMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("upgrade-check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the server version upgraded from (required)")
	to := fs.String("to", dockertarget.DefaultServerVersion, "the server version upgraded to")
	rounds := fs.Int("rounds", 2, "runs per version, interleaved A B A B …; timing is judged only with 2 or more")
	tags := fs.String("tags", "", "godog tag expression passed to each run (default: the full suite)")
	subject := fs.String("subject", "reference", "the subject graded in every run (as run --subject)")
	out := fs.String("out", "", "directory for the runs' bundles and upgrade-check.{md,json} (default reports/upgrade-FROM-TO-<time>)")
	seed := fs.Int64("seed", 0, "scenario order seed shared by every run (0 = derived from the clock)")
	threshold := fs.String("threshold", "25%", "relative increase of a median that can be a regression (besides exceeding the spread)")
	floorMs := fs.Float64("floor-ms", compare.DefaultOptions.FloorMs, "smallest increase of a time figure (ms) that can be a regression")
	rejudge := fs.String("judge", "", "judge an earlier upgrade check's runs again (its directory) without running anything, e.g. with another --threshold")
	var runArgs stringList
	fs.Var(&runArgs, "run-arg", "an extra flag passed to every run (repeatable), e.g. --run-arg=--egress-image=X")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: acceptance upgrade-check --from A [--to B] [--rounds N] [--tags EXPR] [--subject S] [--out DIR]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "acceptance upgrade-check: unexpected arguments %q\n", fs.Args())
		return 2
	}
	options := func() (compare.Options, bool) {
		th, err := parseThreshold(*threshold)
		if err != nil {
			fmt.Fprintf(stderr, "acceptance upgrade-check: --threshold: %v\n", err)
			return compare.Options{}, false
		}
		return compare.Options{Threshold: th, FloorMs: *floorMs, FloorBytes: compare.DefaultOptions.FloorBytes}, true
	}
	if *rejudge != "" {
		opts, ok := options()
		if !ok {
			return 2
		}
		return upgradecheck.Rejudge(*rejudge, opts, stdout, stderr)
	}
	if *from == "" || !dockertarget.ValidVersion(*from) || !dockertarget.ValidVersion(*to) {
		fmt.Fprintln(stderr, "acceptance upgrade-check: --from and --to must be server versions (e.g. --from 0.2.3 --to 1.1.1)")
		return 2
	}
	if *from == *to {
		fmt.Fprintln(stderr, "acceptance upgrade-check: --from and --to are the same version")
		return 2
	}
	if *rounds < 1 || *rounds > 10 {
		fmt.Fprintln(stderr, "acceptance upgrade-check: --rounds must be 1 to 10")
		return 2
	}
	opts, ok := options()
	if !ok {
		return 2
	}
	if err := checkTags(*tags); err != nil {
		fmt.Fprintf(stderr, "acceptance upgrade-check: %v\n", err)
		return 2
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano() % 1_000_000
	}
	if *out == "" {
		*out = filepath.Join("reports", fmt.Sprintf("upgrade-%s-%s-%s", *from, *to, time.Now().UTC().Format("20060102T150405Z")))
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "acceptance upgrade-check: %v\n", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "acceptance upgrade-check: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return upgradecheck.Check(ctx, upgradecheck.Config{
		From: *from, To: *to, Rounds: *rounds, Tags: *tags, Subject: *subject, Out: *out, Seed: *seed,
		RunArgs: runArgs, Options: opts, Self: self,
	}, stdout, stderr)
}
