package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// checkFlagValues rejects flag values that cannot mean anything (exit 2):
// a non-positive subject timeout, a --baselines directory that does not
// exist. What the machine lacks (checkWheels) is checked after every usage
// error, so a mistyped command line is named as such even before make deps.
func checkFlagValues(c *runConfig) error {
	if c.subjectTimeout <= 0 {
		return fmt.Errorf("--subject-timeout must be positive, got %s", c.subjectTimeout)
	}
	if c.repeat < 1 {
		return fmt.Errorf("--repeat must be at least 1, got %d", c.repeat)
	}
	return checkBaselines(c.baselines, c.baselinesSet, report.BaselinesFromEnv(c.baselines).Update)
}

// checkWheels rejects a wheels directory that does not exist (exit 2): the
// stub package index cannot serve the install step without it.
func checkWheels(c *runConfig) error {
	st, err := os.Stat(c.wheels)
	switch {
	case err != nil:
		return fmt.Errorf("--wheels %s: %v; the stub package index needs the wheels `make deps` puts in .cache/wheels (a missing dependency is the harness's problem, never the submission's)", c.wheels, err)
	case !st.IsDir():
		return fmt.Errorf("--wheels %s is not a directory", c.wheels)
	}
	return nil
}

// defaultWheels is the default --wheels: .cache/wheels of the working
// directory when it is there (the checkout), else .cache/wheels of the
// checkout the running binary was built in (bin/acceptance or a binary at the
// checkout's root), so `grade` run from elsewhere still finds them; else a
// clear usage error.
func defaultWheels() (string, error) {
	const rel = ".cache/wheels"
	if st, err := os.Stat(rel); err == nil && st.IsDir() {
		return filepath.Abs(rel)
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err == nil {
		if root := checkoutOf(filepath.Dir(exe)); root != "" {
			if w := filepath.Join(root, rel); isDir(w) {
				return w, nil
			}
		}
	}
	cwd, _ := os.Getwd()
	return "", fmt.Errorf("--wheels not given, and there is no %s in the working directory (%s) nor in the checkout of this binary (%s): "+
		"run from the checkout, or pass --wheels DIR (`make deps` fills .cache/wheels)", rel, cwd, exe)
}

// checkoutOf finds the acceptance checkout holding dir (dir or one of its
// parents, at most three levels up: bin/, the root): the directory whose
// go.mod declares this module. Empty when there is none.
func checkoutOf(dir string) string {
	for i := 0; i < 4 && dir != "" && dir != "/"; i++ {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.HasPrefix(string(b), "module github.com/osb-capstone/acceptance\n") {
			return dir
		}
		dir = filepath.Dir(dir)
	}
	return ""
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// checkBaselines rejects a --baselines directory given on the command line
// that does not exist or is not a directory: a mistyped path would
// otherwise report every entry as "no baseline yet" and detect no drift at
// all. Recording baselines (UPDATE_BASELINES=1, make update-baselines) may
// name a new directory: it is created there. An empty value turns drift
// detection off on purpose.
func checkBaselines(dir string, given, update bool) error {
	if !given || dir == "" || update {
		return nil
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("--baselines %s: %v (baselines are only created when recording them: UPDATE_BASELINES=1 / make update-baselines)", dir, err)
	case !st.IsDir():
		return fmt.Errorf("--baselines %s is not a directory", dir)
	}
	return nil
}

// shellWords are builtins and keywords a command may start with that no
// PATH lookup finds.
var shellWords = map[string]bool{
	"cd": true, "exec": true, ".": true, "source": true, "eval": true, "set": true, "export": true, "exit": true,
	":": true, "command": true, "time": true, "trap": true, "ulimit": true, "umask": true, "wait": true,
	"if": true, "for": true, "while": true, "until": true, "case": true, "{": true, "(": true, "!": true,
}

// checkProgram rejects a run-only submission whose program does not exist
// (exit 2): `--subject 'pyhton3 agent.py'` is the command line's mistake,
// not a submission to grade. Commands the harness cannot read statically
// (starting with a variable, a quote, a subshell …) are left to the shell.
func checkProgram(sub *submission.Submission) error {
	if sub.Source != submission.SourceCommand {
		return nil
	}
	prog := firstWord(sub.Manifest.Run)
	if prog == "" || shellWords[prog] || strings.ContainsAny(prog, "$`'\"(){}|;&<>*?[]\\~") {
		return nil
	}
	if strings.Contains(prog, "/") {
		p := prog
		if !filepath.IsAbs(p) && sub.Dir != "" {
			p = filepath.Join(sub.Dir, p)
		}
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("the program %q does not exist: %v", prog, err)
		}
		if st.IsDir() || st.Mode()&0o111 == 0 {
			return fmt.Errorf("the program %q is not an executable file", prog)
		}
		return nil
	}
	if _, err := exec.LookPath(prog); err != nil {
		return fmt.Errorf("the program %q is not found on PATH", prog)
	}
	return nil
}

// firstWord is the command's program: its first word after VAR=value assignments.
func firstWord(cmd string) string {
	for _, w := range strings.Fields(cmd) {
		if i := strings.IndexByte(w, '='); i > 0 && !strings.ContainsAny(w[:i], "/$'\"") {
			continue
		}
		return w
	}
	return ""
}
