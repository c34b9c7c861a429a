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
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/review"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// renderMain is `acceptance render [flags] BUNDLE...`: re-renders report.md,
// report.json, junit.xml, report.html and results.json of each bundle from
// its results.jsonl (e.g. a run SIGKILLed before writing its report), keeping
// a review if there is one, and repairs an empty or torn cucumber.json. A run
// that never finalized is reported as aborted (never passed). Exit 0 when all
// were rendered, 2 otherwise.
func renderMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baselineDir := fs.String("baselines", report.DefaultBaselineDir, "evidence baseline directory for drift detection (never written by render)")
	defKeys, _ := report.DefaultJournalKeyDir()
	keyDir := fs.String("journal-keys", defKeys, "where the grader kept each run's journal key ($"+report.EnvJournalKeys+"); every results.jsonl line must verify under its run's key")
	unsigned := fs.Bool("unsigned", false, "render without verifying the journal (a bundle graded elsewhere or before journals were signed); the output says so")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: acceptance render [--baselines DIR] [--journal-keys DIR | --unsigned] BUNDLE...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	code := 0
	for _, dir := range fs.Args() {
		if _, err := os.Stat(filepath.Join(dir, report.JournalFile)); err != nil {
			fmt.Fprintf(stderr, "acceptance render: %s has no %s: not a report bundle\n", dir, report.JournalFile)
			code = 2
			continue
		}
		b := report.Baselines{Dir: *baselineDir,
			Exclude: func(ref string) bool { return strings.HasPrefix(filepath.ToSlash(ref), "evidence/subject-") }}
		opts := report.Options{Baselines: b, Review: review.Hook}
		if *unsigned {
			fmt.Fprintf(stdout, "%s: journal NOT verified (--unsigned): its lines may come from another run or be forged\n", dir)
		} else if *keyDir == "" {
			fmt.Fprintf(stderr, "acceptance render: no journal key directory: give --journal-keys DIR or set $%s (or --unsigned)\n", report.EnvJournalKeys)
			return 2
		} else {
			opts.JournalKeys = *keyDir
		}
		doc, err := report.RenderDir(dir, rubric.Course, opts)
		if je := (*report.JournalError)(nil); errors.As(err, &je) {
			// Refused: nothing of the bundle is rewritten.
			fmt.Fprintf(stderr, "acceptance render: %s\n", inert.Line(err.Error()))
			code = 2
			continue
		}
		if note, cerr := report.RepairCucumber(dir); cerr != nil {
			fmt.Fprintf(stderr, "acceptance render: %s: %s\n", inert.Line(dir), inert.Line(cerr.Error()))
		} else if note != "" {
			fmt.Fprintf(stdout, "%s: %s\n", inert.Line(dir), inert.Line(note))
		}
		if err != nil {
			fmt.Fprintf(stderr, "acceptance render: %s: %s\n", inert.Line(dir), inert.Line(err.Error()))
			code = 2
			continue
		}
		fmt.Fprintf(stdout, "%s: %s\n", dir, report.SummaryLine(doc))
		if doc.Final != nil {
			fmt.Fprintf(stdout, "%s: final score after review %s of %s (%s)\n", dir, rubric.Num(doc.Final.Score), rubric.Num(doc.Final.Total), doc.Final.Verdict)
		}
	}
	return code
}
