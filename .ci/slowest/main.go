// Command slowest reads `go test -json` output (files, or stdin) and prints
// what CI needs from it, as it arrives: the output of every failed test and
// one line per package; then the N slowest tests. It exits 1 when a test or package failed
// or the input holds no test event at all.
//
//	go test -json ./... | tee bin/test.json | go run ./.ci/slowest -n 20
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
	os.Exit(run(io.MultiReader(readers...), os.Stdout, *n))
}

// printPackage prints a package's result as it arrives (CI shows progress),
// with the package's own output when it failed (a build error, a panic).
func printPackage(w io.Writer, p result, out []string) {
	word := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "?   "}[p.action]
	fmt.Fprintf(w, "%s\t%s\t%.1fs\n", word, p.pkg, p.elapsed)
	if p.action == "fail" && len(out) > 0 {
		fmt.Fprint(w, strings.Join(out, ""))
	}
}

func run(r io.Reader, w io.Writer, n int) int {
	output := map[string][]string{} // pkg + "\x00" + test → output lines
	var tests, pkgs []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	bad := 0
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			// go test prints build errors as plain text.
			if len(strings.TrimSpace(string(line))) > 0 {
				fmt.Fprintln(w, string(line))
				bad++
			}
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			output[key] = append(output[key], e.Output)
		case "pass", "fail", "skip":
			res := result{pkg: e.Package, test: e.Test, action: e.Action, elapsed: e.Elapsed}
			if e.Test == "" {
				pkgs = append(pkgs, res)
				printPackage(w, res, output[key])
			} else {
				tests = append(tests, res)
				if e.Action == "fail" {
					fmt.Fprintf(w, "--- FAIL: %s (%s)\n%s", e.Test, e.Package, strings.Join(output[key], ""))
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
		fmt.Fprintf(w, "%8.1fs  %s  %s\n", t.elapsed, t.test, strings.TrimPrefix(t.pkg, "github.com/osb-capstone/acceptance/"))
	}
	if failed {
		return 1
	}
	return 0
}
