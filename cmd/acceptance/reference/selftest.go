package reference

import (
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The reference submission's own tests, built into the binary:
//
//	acceptance reference selftest unit|integration [--junit FILE]
//
// Built in because a grader runs a submission's test command with a fresh
// HOME and no network: `go test` there would have neither a build cache nor
// a module cache (and must not download one). The same checks also run under
// `go test` (selftest_test.go), so they are ordinary tests as well. Output is
// `go test -v` style plus an optional JUnit XML file; exit 1 if any failed.

// checkT is the tiny testing.T the checks use.
type checkT struct {
	failures []string
	skipped  string
}

func (t *checkT) Errorf(format string, a ...any) {
	t.failures = append(t.failures, fmt.Sprintf(format, a...))
}

// errSkip ends a check that cannot run here.
var errSkip = errors.New("skip")

func (t *checkT) Skip(reason string) { t.skipped = reason; panic(errSkip) }

// selfCheck is one test of the reference.
type selfCheck struct {
	name string
	run  func(ctx context.Context, t *checkT)
}

// checkResult is one check's outcome.
type checkResult struct {
	Name     string
	Duration time.Duration
	Failures []string
	Skipped  string
}

func runCheck(ctx context.Context, c selfCheck) (r checkResult) {
	t := &checkT{}
	start := time.Now()
	defer func() {
		if p := recover(); p != nil && p != errSkip {
			t.failures = append(t.failures, fmt.Sprintf("panic: %v", p))
		}
		r = checkResult{Name: c.name, Duration: time.Since(start), Failures: t.failures, Skipped: t.skipped}
	}()
	c.run(ctx, t)
	return
}

// SelftestMain runs `selftest unit|integration [--junit FILE]`.
func SelftestMain(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "unit" && args[0] != "integration") {
		fmt.Fprintln(stderr, "usage: acceptance reference selftest unit|integration [--junit FILE]")
		return 2
	}
	kind := args[0]
	fs := flag.NewFlagSet("acceptance reference selftest "+kind, flag.ContinueOnError)
	fs.SetOutput(stderr)
	junit := fs.String("junit", "", "write a JUnit XML report here")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	checks := unitChecks()
	if kind == "integration" {
		checks = integrationChecks()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var results []checkResult
	failed, skipped := 0, 0
	for _, c := range checks {
		fmt.Fprintf(stdout, "=== RUN   %s\n", c.name)
		r := runCheck(ctx, c)
		results = append(results, r)
		switch {
		case len(r.Failures) > 0:
			failed++
			for _, f := range r.Failures {
				fmt.Fprintf(stdout, "    %s\n", f)
			}
			fmt.Fprintf(stdout, "--- FAIL: %s (%.2fs)\n", c.name, r.Duration.Seconds())
		case r.Skipped != "":
			skipped++
			fmt.Fprintf(stdout, "    %s\n--- SKIP: %s (%.2fs)\n", r.Skipped, c.name, r.Duration.Seconds())
		default:
			fmt.Fprintf(stdout, "--- PASS: %s (%.2fs)\n", c.name, r.Duration.Seconds())
		}
	}
	fmt.Fprintf(stdout, "%s: %d tests, %d passed, %d failed, %d skipped\n", kind, len(results), len(results)-failed-skipped, failed, skipped)
	if *junit != "" {
		if err := writeJUnit(*junit, "reference-"+kind, results); err != nil {
			fmt.Fprintf(stderr, "acceptance reference selftest: %v\n", err)
			return 1
		}
	}
	if failed > 0 {
		return 1
	}
	return 0
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(path, suite string, results []checkResult) error {
	s := junitSuite{Name: suite, Tests: len(results)}
	var total time.Duration
	for _, r := range results {
		c := junitCase{Name: r.Name, Classname: suite, Time: fmt.Sprintf("%.3f", r.Duration.Seconds())}
		if len(r.Failures) > 0 {
			s.Failures++
			c.Failure = &junitMessage{Message: r.Failures[0], Text: strings.Join(r.Failures, "\n")}
		} else if r.Skipped != "" {
			s.Skipped++
			c.Skipped = &junitMessage{Message: r.Skipped}
		}
		total += r.Duration
		s.Cases = append(s.Cases, c)
	}
	s.Time = fmt.Sprintf("%.3f", total.Seconds())
	b, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}
