package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report/classreport"
	"github.com/osb-capstone/acceptance/harness/review"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// reviewMain is `acceptance review [flags] BUNDLE`: a reviewer's judgement of
// the reviewer-judgement entries and the defense questions, from a file or
// interactively; prints the final score with the provenance of every point.
// A bundle of a class run also updates the class summary beside it. Exit 0
// when the judgement was recorded, 2 on usage or invalid answers.
func reviewMain(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("review", flag.ContinueOnError)
	fs.SetOutput(stderr)
	answers := fs.String("answers", "", "answers file (YAML, see the README); without it the review is interactive")
	reviewer := fs.String("reviewer", "", "reviewer's name (overrides the answers file's; default prompts, or $USER)")
	redo := fs.Bool("redo", false, "interactive: revisit items already judged")
	var overrides stringList
	fs.Var(&overrides, "override", "interactive: also walk this measured entry to override it (repeatable; a reason is required)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: acceptance review [--answers FILE] [--reviewer NAME] [--redo] [--override ID]... BUNDLE")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	dir := fs.Arg(0)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		fmt.Fprintf(stderr, "acceptance review: %s is not a report bundle directory\n", dir)
		return 2
	}
	var err error
	if *answers != "" {
		if len(overrides) > 0 || *redo {
			fmt.Fprintln(stderr, "acceptance review: --override and --redo are for the interactive review; put overrides in the answers file")
			return 2
		}
		f, oerr := os.Open(*answers)
		if oerr != nil {
			fmt.Fprintf(stderr, "acceptance review: %s\n", inert.Line(oerr.Error()))
			return 2
		}
		defer f.Close()
		fin, ferr := review.FromFile(dir, f, *reviewer, time.Now().UTC())
		err = ferr
		if err == nil {
			review.WriteSummary(stdout, fin)
		}
	} else {
		var ids []rubric.ID
		for _, o := range overrides {
			ids = append(ids, rubric.ID(o))
		}
		fin, werr := review.Walk(dir, stdin, stdout, review.WalkOptions{Reviewer: *reviewer, Redo: *redo, Overrides: ids})
		err = werr
		if err == nil {
			fmt.Fprintln(stdout)
			review.WriteSummary(stdout, fin)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "acceptance review: nothing recorded from the answers:\n  %s\n", inertLines(err.Error(), "\n  "))
		return 2
	}
	fmt.Fprintf(stdout, "re-rendered %s (report.md, report.html, junit.xml, results.json); report.json is unchanged, the judgement is in review.json\n", dir)
	// A bundle of a class run (`acceptance grade`): its class summary shows
	// the final score from now on.
	class := filepath.Dir(filepath.Clean(dir))
	if ok, cerr := classreport.RefreshClassSummary(class, dir); cerr != nil {
		fmt.Fprintf(stderr, "acceptance review: the class summary in %s was not updated: %s\n", inert.Line(class), inert.Line(cerr.Error()))
	} else if ok {
		fmt.Fprintf(stdout, "updated the class summary %s\n", filepath.Join(class, classreport.ClassMarkdownFile))
	}
	return 0
}

// inertLines is an error of several lines (one per problem, each the
// grader's) with each line made inert (harness/inert.Line), joined by sep.
func inertLines(s, sep string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = inert.Line(l)
	}
	return strings.Join(lines, sep)
}
