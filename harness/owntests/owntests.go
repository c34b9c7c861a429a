// Package owntests judges a submission's own tests (M4's measurable part).
//
// It counts the tests a test command ran (test.unit, test.integration),
// from what the command left behind: the
// JUnit XML reports it wrote into its output directory (JUnit), or else the
// test runner's own summary in its output (Summary: pytest, unittest,
// go test -v, a plain "N passed, M failed"). A count says where it came
// from (Count.Source); nothing countable gives false, never a zero count.
// The reports are the submission's files: each is read up to MaxJUnitFile,
// never through a symbolic link (harness/regularfile).
//
// A count alone cannot tell a test that ran from a JUnit file written
// without running anything: TouchedSandbox says whether the server saw the
// integration test command's own key create a sandbox, run a command in it
// and delete it.
package owntests

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/regularfile"
)

// Count is how many tests a test command ran, and where the count came from.
type Count struct {
	Passed, Failed, Skipped int
	Source                  string // "junit <files>", "pytest summary", …; "" when nothing could be counted
}

// junitSuite is the part of a JUnit XML report the count needs: either a
// <testsuites> root or a single <testsuite>.
type junitSuite struct {
	XMLName xml.Name     `xml:""`
	Suites  []junitSuite `xml:"testsuite"`
	Cases   []struct {
		Failure *struct{} `xml:"failure"`
		Error   *struct{} `xml:"error"`
		Skipped *struct{} `xml:"skipped"`
	} `xml:"testcase"`
}

func (s junitSuite) add(c *Count) {
	for _, tc := range s.Cases {
		switch {
		case tc.Failure != nil || tc.Error != nil:
			c.Failed++
		case tc.Skipped != nil:
			c.Skipped++
		default:
			c.Passed++
		}
	}
	for _, sub := range s.Suites {
		sub.add(c)
	}
}

// JUnit counts the test cases of every JUnit XML file the command wrote
// into dir (recursively, files ending in .xml, at most 50 files of 16 MiB).
func JUnit(dir string) (Count, bool) {
	var c Count
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(strings.ToLower(p), ".xml") || len(files) >= 50 {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 16<<20 {
			return nil
		}
		b, err := regularfile.ReadMax(p, MaxJUnitFile)
		if err != nil {
			return nil
		}
		var s junitSuite
		if xml.Unmarshal(b, &s) != nil || (s.XMLName.Local != "testsuite" && s.XMLName.Local != "testsuites") {
			return nil
		}
		s.add(&c)
		files = append(files, filepath.Base(p))
		return nil
	})
	if len(files) == 0 {
		return c, false
	}
	c.Source = "JUnit XML " + strings.Join(files, ", ")
	return c, true
}

// MaxJUnitFile caps each JUnit XML file read (a larger one is not counted).
const MaxJUnitFile = 16 << 20

var (
	rePassedN    = regexp.MustCompile(`\b(\d+) passed\b`)
	reFailedN    = regexp.MustCompile(`\b(\d+) failed\b`)
	reErrorsN    = regexp.MustCompile(`\b(\d+) errors?\b`)
	reSkippedN   = regexp.MustCompile(`\b(\d+) skipped\b`)
	reUnittestN  = regexp.MustCompile(`(?m)^Ran (\d+) tests? in `)
	reUnittestOK = regexp.MustCompile(`(?m)^OK\b`)
	reUnittestF  = regexp.MustCompile(`(?m)^FAILED \((.*)\)`)
	reGoPass     = regexp.MustCompile(`(?m)^\s*--- PASS: `)
	reGoFail     = regexp.MustCompile(`(?m)^\s*--- FAIL: `)
	reGoSkip     = regexp.MustCompile(`(?m)^\s*--- SKIP: `)
)

// Summary counts tests from a runner's own summary line: pytest's
// "N passed, M failed … in Xs", unittest's "Ran N tests" then "OK" or
// "FAILED (failures=F, errors=E)", go test -v's "--- PASS"/"--- FAIL" lines,
// and a plain "N passed, M failed".
func Summary(out string) (Count, bool) {
	atoi := func(m []string, i int) int {
		if len(m) > i {
			n, _ := strconv.Atoi(m[i])
			return n
		}
		return 0
	}
	last := func(re *regexp.Regexp) []string {
		all := re.FindAllStringSubmatch(out, -1)
		if len(all) == 0 {
			return nil
		}
		return all[len(all)-1]
	}
	if m := last(reUnittestN); m != nil {
		c := Count{Source: "unittest summary"}
		n := atoi(m, 1)
		if f := last(reUnittestF); f != nil {
			for _, part := range strings.Split(f[1], ",") {
				k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
				x, _ := strconv.Atoi(v)
				switch k {
				case "failures", "errors":
					c.Failed += x
				case "skipped":
					c.Skipped += x
				}
			}
		} else if reUnittestOK.MatchString(out) {
			if k := regexp.MustCompile(`skipped=(\d+)`).FindStringSubmatch(out); k != nil {
				c.Skipped = atoi(k, 1)
			}
		} else {
			return Count{}, false
		}
		c.Passed = n - c.Failed - c.Skipped
		return c, true
	}
	if p, f := len(reGoPass.FindAllString(out, -1)), len(reGoFail.FindAllString(out, -1)); p+f > 0 {
		return Count{Passed: p, Failed: f, Skipped: len(reGoSkip.FindAllString(out, -1)), Source: "go test -v summary"}, true
	}
	// pytest and plain "N passed, M failed": the last line that says "passed" or "failed".
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := lines[i]
		pm, fm := rePassedN.FindStringSubmatch(l), reFailedN.FindStringSubmatch(l)
		if pm == nil && fm == nil {
			continue
		}
		c := Count{Passed: atoi(pm, 1), Failed: atoi(fm, 1), Source: "summary line " + strconv.Quote(strings.TrimSpace(l))}
		if em := reErrorsN.FindStringSubmatch(l); em != nil {
			c.Failed += atoi(em, 1)
		}
		if sm := reSkippedN.FindStringSubmatch(l); sm != nil {
			c.Skipped = atoi(sm, 1)
		}
		return c, true
	}
	return Count{}, false
}

// TouchedSandbox says whether the server saw the integration test
// command's own key (saw: what it saw of that key) create a sandbox, run a
// command in it and delete it, and why. A target without an audit trail
// (bundled false) shows lifecycle calls only, through the recording proxy:
// there the command inside the sandbox is not seen, and the reason says
// so (target names it).
func TouchedSandbox(saw command.Saw, bundled bool, target string) (bool, string) {
	if len(saw.Created) == 0 {
		return false, "the server saw its key create no sandbox"
	}
	mine := map[string]bool{}
	for _, id := range saw.Created {
		mine[id] = true
	}
	deleted := map[string]bool{}
	for _, ev := range saw.Calls {
		if lc := ev.Lifecycle; lc != nil && lc.Method == "DELETE" && lc.Status >= 200 && lc.Status < 300 && mine[ev.SandboxID] {
			deleted[ev.SandboxID] = true
		}
	}
	ran := map[string]bool{}
	for _, ev := range saw.Events {
		if ev.Kind == "command" && ev.Command != nil && mine[ev.SandboxID] {
			ran[ev.SandboxID] = true
		}
	}
	if !bundled {
		for _, id := range saw.Created {
			if deleted[id] {
				return true, fmt.Sprintf("its key created and deleted sandbox %s (target %s: commands inside a sandbox are not seen through the recording proxy)", id, target)
			}
		}
		return false, fmt.Sprintf("its key created %s and deleted none of them", strings.Join(saw.Created, ", "))
	}
	for _, id := range saw.Created {
		if ran[id] && deleted[id] {
			return true, fmt.Sprintf("its key created sandbox %s, ran a command in it and deleted it", id)
		}
	}
	var what []string
	for _, id := range saw.Created {
		switch {
		case !ran[id] && !deleted[id]:
			what = append(what, id+": no command, not deleted")
		case !ran[id]:
			what = append(what, id+": no command ran in it")
		default:
			what = append(what, id+": never deleted")
		}
	}
	return false, "no sandbox its key created went through create, command and delete (" + strings.Join(what, "; ") + ")"
}
