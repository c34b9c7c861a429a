package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report/classreport"
)

// classMain is `acceptance class OUT RUN...`: the class summary (class.md,
// class.csv, class.html) in OUT over the bundles of any number of runs, each
// RUN a class directory `acceptance grade` wrote (e.g. one --shard's --out)
// or a single bundle. Strict: bundles of different suite versions, builds or
// rubric hashes are refused (exit 2, nothing written).
func classMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("class", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: acceptance class OUT RUN_DIR...\n\n"+
			"Merge the report bundles of any number of grading runs (each RUN_DIR a class directory written by\n"+
			"`acceptance grade`, e.g. one --shard's --out, or one bundle) into one class summary in OUT\n"+
			"(class.md, class.csv, class.html, class.json). Bundles graded by different suite versions or rubric hashes are\n"+
			"refused; a submission graded in several runs is shown once (the latest), with every run named.\n")
		fs.PrintDefaults()
	}
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if len(rest) < 2 {
		fmt.Fprintln(stderr, "acceptance class: name the summary directory OUT and at least one run directory")
		fs.Usage()
		return 2
	}
	out, runs := rest[0], rest[1:]
	for _, f := range []string{classreport.ClassMarkdownFile, classreport.ClassCSVFile, classreport.ClassHTMLFile, classreport.ClassJSONFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err == nil {
			fmt.Fprintf(stderr, "acceptance class: %s already holds a class summary (%s); name a new directory\n", out, f)
			return 2
		}
	}
	m, err := classreport.MergeClass(out, runs)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance class: %s\n", inert.Line(err.Error()))
		return 2
	}
	fmt.Fprintf(stdout, "acceptance class: %d submission(s) from %d run(s)\n", len(m.Bundles), len(runs))
	for _, tw := range m.Twice {
		var others []string
		for _, o := range tw.Others {
			others = append(others, o.Run)
		}
		fmt.Fprintf(stdout, "  %s graded %d times: shown %s (the latest); also graded in %s\n", inert.Line(tw.Submission), 1+len(tw.Others), inert.Line(tw.Shown.Run), inert.Line(strings.Join(others, "; ")))
	}
	fmt.Fprintf(stdout, "class summary: %s\n", filepath.Join(out, classreport.ClassMarkdownFile))
	return 0
}
