package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
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
	var sides [2]upgradecheck.Images
	fs.StringVar(&sides[0].Execd, "from-execd-image", "", "the execd image of --from's runs (default: the one its server version names)")
	fs.StringVar(&sides[0].Egress, "from-egress-image", "", "the egress image of --from's runs (default: the one its server version names)")
	fs.StringVar(&sides[1].Execd, "to-execd-image", "", "the execd image of --to's runs (default: the one its server version names)")
	fs.StringVar(&sides[1].Egress, "to-egress-image", "", "the egress image of --to's runs (default: the one its server version names)")
	order := fs.String("order", upgradecheck.OrderABBA, "the runs' order: abba (A B, B A, …) or random (each round's pair drawn from --seed)")
	var runArgs stringList
	fs.Var(&runArgs, "run-arg", "an extra flag passed to every run (repeatable), e.g. --run-arg=--sandbox-image=X (execd and egress go per side)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: acceptance upgrade-check --from A [--to B] [--from-execd-image REF --from-egress-image REF] [--to-execd-image REF --to-egress-image REF] [--rounds N] [--order abba|random] [--tags EXPR] [--subject S] [--out DIR]")
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
	if *order != upgradecheck.OrderABBA && *order != upgradecheck.OrderRandom {
		fmt.Fprintf(stderr, "acceptance upgrade-check: --order must be %s or %s\n", upgradecheck.OrderABBA, upgradecheck.OrderRandom)
		return 2
	}
	for _, a := range runArgs {
		if strings.HasPrefix(a, "--execd-image") || strings.HasPrefix(a, "--egress-image") || strings.HasPrefix(a, "-execd-image") || strings.HasPrefix(a, "-egress-image") {
			fmt.Fprintf(stderr, "acceptance upgrade-check: --run-arg=%s would give both versions one image: use --from-execd-image/--to-execd-image (and egress) to give each side its own\n", a)
			return 2
		}
	}
	for i, v := range []string{*from, *to} {
		if err := dockertarget.CheckPairing(v, sides[i].Execd, sides[i].Egress); err != nil {
			fmt.Fprintf(stderr, "acceptance upgrade-check: %v (per side: --%s-execd-image, --%s-egress-image)\n", err, []string{"from", "to"}[i], []string{"from", "to"}[i])
			return 2
		}
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
		RunArgs: runArgs, Options: opts, Self: self, FromImages: sides[0], ToImages: sides[1], Order: *order,
	}, stdout, stderr)
}
