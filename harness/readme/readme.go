// Package readme checks M4's measurable part of a submission's README: it
// is the submission's own file (never through a symbolic link), fits one
// printed page (MaxLines, MaxBytes) and names each command the manifest
// declares (CommandKey: what a README must mention of a command). Whether
// another person can reproduce the run from it stays a reviewer's
// judgement. A README that fails is the submission's failure
// (command.Failf).
package readme

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/subfile"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// One printed page.
const (
	MaxLines = 80
	MaxBytes = 6000
)

// Check checks the README exists inside the submission, fits one page
// and names each declared command.
func Check(sub *submission.Submission) (string, error) {
	name := sub.Manifest.Readme
	p := filepath.Join(sub.Dir, name)
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() {
		return "", command.Failf("the submission has no README at %s", name)
	}
	// No symbolic link on the way either (readme: docs/README.md with docs
	// linked elsewhere): the README is the submission's own file.
	root, rerr := filepath.EvalSymlinks(sub.Dir)
	if real, err := filepath.EvalSymlinks(p); rerr != nil || err != nil || real != filepath.Join(root, filepath.Clean(name)) {
		return "", command.Failf("the README path %s goes through a symbolic link; the grader reads only the submission's own files", name)
	}
	if st.Size() > 1<<20 {
		return "", command.Failf("%s is %d bytes; one page is at most %d", name, st.Size(), MaxBytes)
	}
	b, err := subfile.Read(p, name, subfile.Readme)
	if err != nil {
		return "", command.Failf("%v", err)
	}
	lines := bytes.Count(bytes.TrimRight(b, "\n"), []byte("\n")) + 1
	if len(bytes.TrimSpace(b)) == 0 {
		return "", command.Failf("%s is empty", name)
	}
	if lines > MaxLines || len(b) > MaxBytes {
		return "", command.Failf("%s has %d lines and %d bytes; one page is at most %d lines and %d bytes", name, lines, len(b), MaxLines, MaxBytes)
	}
	var unnamed []string
	for _, c := range sub.Manifest.Commands() {
		key := CommandKey(c.Command)
		if key != "" && !NamesCommand(b, key) {
			unnamed = append(unnamed, fmt.Sprintf("%s (%q)", c.Field, key))
		}
	}
	if len(unnamed) > 0 {
		return "", command.Failf("%s does not name the command(s) %s", name, strings.Join(unnamed, ", "))
	}
	return fmt.Sprintf("%s: %d lines, names its %d command(s)", name, lines, len(sub.Manifest.Commands())), nil
}

// CommandKey is what a README must mention of a command: its first word
// that names a file (has a "/" or an extension), else its first two words;
// placeholders and flags are left out.
func CommandKey(cmd string) string {
	var words []string
	for _, w := range strings.Fields(cmd) {
		if strings.Contains(w, "{") || strings.HasPrefix(w, "-") || strings.Contains(w, "=") {
			continue
		}
		w = strings.Trim(w, `"'`)
		if strings.Contains(w, "/") || (strings.Contains(w, ".") && !strings.HasPrefix(w, ".")) {
			return w
		}
		words = append(words, w)
	}
	switch {
	case len(words) >= 2:
		return words[0] + " " + words[1]
	case len(words) == 1:
		return words[0]
	}
	return ""
}

// NamesCommand reports whether a README names a command by its key: the
// key's words in order on one line, other words (flags such as `--agent`)
// allowed between them, as a README writes `acceptance reference --agent
// --agent-flaw env-in-prompt` for the key "reference env-in-prompt".
func NamesCommand(readme []byte, key string) bool {
	if bytes.Contains(readme, []byte(key)) {
		return true
	}
	words := strings.Fields(key)
	for _, line := range strings.Split(string(readme), "\n") {
		rest, ok := line, true
		for _, w := range words {
			i := strings.Index(rest, w)
			if i < 0 {
				ok = false
				break
			}
			rest = rest[i+len(w):]
		}
		if ok {
			return true
		}
	}
	return false
}
