// Command slowest reads `go test -json` output (files, or stdin) and prints
// what CI needs from it, as it arrives: the output of every failed test and
// one line per package; then the N slowest tests and a short list of what failed
// (each failed test, and the tests a timed-out package was running). It exits 1
// when a test or package failed or the input holds no test event at all.
//
// -summary FILE writes that short list to FILE too: make test prints it again as
// its last lines, after the leak check and the docker slice, because a CI log is
// often read from its tail only.
//
//	go test -json ./... | tee bin/test.json | go run ./.ci/slowest -n 20 -summary bin/failed.txt
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of test2json output (go doc test2json).
type event struct {
	Time    time.Time
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type result struct {
	pkg, test string
	action    string
	elapsed   float64
}

func main() {
	n := flag.Int("n", 20, "how many of the slowest tests to print")
	summary := flag.String("summary", "", "also write the list of what failed to this file (empty when nothing failed)")
	flag.Parse()
	var readers []io.Reader
	for _, f := range flag.Args() {
		fh, err := os.Open(f)
		if err != nil {
			fmt.Fprintln(os.Stderr, "slowest:", err)
			os.Exit(2)
		}
		defer fh.Close()
		readers = append(readers, fh)
	}
	if len(readers) == 0 {
		readers = append(readers, os.Stdin)
	}
	var list strings.Builder
	code := run(io.MultiReader(readers...), os.Stdout, *n, &list)
	if *summary != "" {
		if err := os.WriteFile(*summary, []byte(list.String()), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "slowest:", err)
			if code == 0 {
				code = 2
			}
		}
	}
	os.Exit(code)
}

// modulePrefix is cut from package names in what slowest prints.
const modulePrefix = "github.com/osb-capstone/acceptance/"

// timeoutAt is the index of the "panic: test timed out" line in out, or -1.
func timeoutAt(out []string) int {
	for i, l := range out {
		if strings.HasPrefix(l, "panic: test timed out") {
			return i
		}
	}
	return -1
}

// timedOut returns the "panic: test timed out" line of a package's output and
// the tests it names as running, or "" when the package did not time out.
// test2json files that output under the test that was running, so out is every
// line the package left without a result, its own and its unfinished tests'.
func timedOut(out []string) string {
	i := timeoutAt(out)
	if i < 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(strings.TrimSpace(out[i]))
	for _, r := range out[i+1:] {
		if strings.TrimSpace(r) == "running tests:" {
			continue
		}
		if !strings.HasPrefix(r, "\t\t") {
			break
		}
		b.WriteString("; running " + strings.TrimSpace(r))
	}
	return b.String()
}

// unfinished returns the output of a package's tests that have no result (a
// timeout or a crash ended the package while they ran), oldest test first, and
// removes it from output.
func unfinished(output map[string][]string, order []string, pkg string) []string {
	var out []string
	for _, key := range order {
		lines, ok := output[key]
		if !ok || !strings.HasPrefix(key, pkg+"\x00") || key == pkg+"\x00" {
			continue
		}
		out = append(out, lines...)
		delete(output, key)
	}
	return out
}

// tail keeps the last n lines of a long output and the timeout's lines,
// so a goroutine dump does not bury what came before it.
func tail(out []string, n int) []string {
	last := func(lines []string) []string {
		if len(lines) > n {
			return append([]string{fmt.Sprintf("... (%d lines)\n", len(lines)-n)}, lines[len(lines)-n:]...)
		}
		return lines
	}
	i := timeoutAt(out)
	if i < 0 {
		return last(out)
	}
	end := i + 1
	for end < len(out) && strings.HasPrefix(out[end], "\t") {
		end++
	}
	return append(append([]string{}, last(out[:i])...), out[i:end]...)
}

// printPackage prints a package's result as it arrives (CI shows progress),
// with the package's own output when it failed (a build error, a panic, a timeout).
func printPackage(w io.Writer, p result, out []string) {
	word := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "?   "}[p.action]
	fmt.Fprintf(w, "%s\t%s\t%.1fs\n", word, p.pkg, p.elapsed)
	if p.action == "fail" && len(out) > 0 {
		fmt.Fprint(w, strings.Join(out, ""))
	}
}

// run reads the stream, prints as above and writes the short list of what
// failed to list (nothing when nothing failed).
func run(r io.Reader, w io.Writer, n int, list io.Writer) int {
	output := map[string][]string{} // pkg + "\x00" + test → output lines
	var order []string              // output's keys, first seen first
	var tests, pkgs []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	bad := 0
	var failures []string
	short := func(pkg string) string { return strings.TrimPrefix(pkg, modulePrefix) }
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// go test prints build errors as plain text.
			if len(strings.TrimSpace(string(line))) > 0 {
				fmt.Fprintln(w, string(line))
				if bad == 0 {
					failures = append(failures, "not a test event (a build error?): "+strings.TrimSpace(string(line)))
				}
				bad++
			}
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			if _, seen := output[key]; !seen {
				order = append(order, key)
			}
			output[key] = append(output[key], e.Output)
		case "pass", "fail", "skip":
			res := result{pkg: e.Package, test: e.Test, action: e.Action, elapsed: e.Elapsed}
			if e.Test == "" {
				pkgs = append(pkgs, res)
				out := output[key]
				if e.Action == "fail" {
					out = append(tail(unfinished(output, order, e.Package), 60), out...)
					if why := timedOut(out); why != "" {
						failures = append(failures, fmt.Sprintf("TIMEOUT %s: %s", short(e.Package), why))
					} else {
						failures = append(failures, fmt.Sprintf("FAIL package %s (%.1fs)", short(e.Package), e.Elapsed))
					}
				}
				printPackage(w, res, out)
			} else {
				tests = append(tests, res)
				if e.Action == "fail" {
					fmt.Fprintf(w, "--- FAIL: %s (%s)\n%s", e.Test, e.Package, strings.Join(output[key], ""))
					failures = append(failures, fmt.Sprintf("FAIL %s (%s, %.1fs)", e.Test, short(e.Package), e.Elapsed))
				}
			}
			delete(output, key)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(w, "slowest: read:", err)
		return 2
	}
	failed := bad > 0
	for _, r := range append(append([]result{}, tests...), pkgs...) {
		if r.action == "fail" {
			failed = true
		}
	}
	if len(tests) == 0 && len(pkgs) == 0 {
		fmt.Fprintln(w, "slowest: no test events in the input")
		return 1
	}
	// Top-level tests only: a subtest's time is inside its parent's.
	var top []result
	for _, t := range tests {
		if !strings.Contains(t.test, "/") && t.action != "skip" {
			top = append(top, t)
		}
	}
	sort.SliceStable(top, func(i, j int) bool { return top[i].elapsed > top[j].elapsed })
	if len(top) > n {
		top = top[:n]
	}
	fmt.Fprintf(w, "\nslowest %d tests:\n", len(top))
	for _, t := range top {
		fmt.Fprintf(w, "%8.1fs  %s  %s\n", t.elapsed, t.test, short(t.pkg))
	}
	if len(failures) > 0 {
		var b strings.Builder
		fmt.Fprintf(&b, "what failed (%d):\n", len(failures))
		for _, f := range failures {
			fmt.Fprintf(&b, "  %s\n", f)
		}
		fmt.Fprint(w, "\n"+b.String())
		io.WriteString(list, b.String())
	}
	if failed {
		return 1
	}
	return 0
}
