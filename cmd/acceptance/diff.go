package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/osb-capstone/acceptance/harness/report/compare"
)

// diffMain is `acceptance diff [flags] OLD NEW`: the upgrade check. Exit 1
// when NEW regressed against OLD (verdict, score, an entry's verdict, or a
// latency/cost figure beyond the threshold), 0 otherwise, 2 on usage errors
// and on bundles graded under different rubrics (compared, and marked so at
// the top, with --across-rubrics).
func diffMain(args []string, stdout, stderr io.Writer) int {
	o := compare.DefaultOptions
	fs := flag.NewFlagSet("diff", flag.ContinueOnError)
	fs.SetOutput(stderr)
	threshold := fs.String("threshold", "25%", "relative increase of a latency/cost figure that is a regression (e.g. 25% or 0.25)")
	fs.Float64Var(&o.FloorMs, "floor-ms", o.FloorMs, "smallest increase of a time figure (ms) that can be a regression")
	fs.Float64Var(&o.FloorBytes, "floor-bytes", o.FloorBytes, "smallest increase of a byte count that can be a regression")
	fs.BoolVar(&o.AcrossRubrics, "across-rubrics", false, "compare bundles graded under different rubrics (refused otherwise), marked so at the top")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: acceptance diff [--threshold 25%] [--floor-ms 250] [--floor-bytes 65536] [--across-rubrics] OLD_BUNDLE NEW_BUNDLE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 2 {
		fs.Usage()
		return 2
	}
	t, err := parseThreshold(*threshold)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance diff: --threshold: %v\n", err)
		return 2
	}
	o.Threshold = t
	for _, f := range []float64{o.FloorMs, o.FloorBytes} {
		if !(f >= 0) || math.IsInf(f, 0) { // NaN compares false with everything: it would turn every check off
			fmt.Fprintln(stderr, "acceptance diff: --floor-ms and --floor-bytes must be finite numbers, not negative")
			return 2
		}
	}
	c, err := compare.Compare(fs.Arg(0), fs.Arg(1), o)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance diff: %v\n", err)
		return 2
	}
	compare.Write(stdout, c, o)
	if c.Regressed() {
		return 1
	}
	return 0
}

func parseThreshold(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number or a percentage", s)
	}
	if pct {
		f /= 100
	}
	if !(f > 0) || f > 100 {
		return 0, fmt.Errorf("%q must be above 0 (e.g. 25%% or 0.25)", s)
	}
	return f, nil
}
