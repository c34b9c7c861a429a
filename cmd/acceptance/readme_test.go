package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMECommandsUseKnownFlags keeps the documentation's command lines
// true to the commands: every `./bin/acceptance <command> …` (or
// `acceptance <command> …`) line in a shell block and every inline code span
// `acceptance <command> …` of README.md, docs/*.md and mock-server/README.md
// names a command that exists and only flags that command defines (as its
// -h lists them).
func TestREADMECommandsUseKnownFlags(t *testing.T) {
	root := repoRoot(t)
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files := append([]string{filepath.Join(root, "README.md"), filepath.Join(root, "mock-server", "README.md")}, docs...)
	usages := map[string]string{}
	usageOf := func(cmd string) string {
		if u, ok := usages[cmd]; ok {
			return u
		}
		var out, errb bytes.Buffer
		dispatch([]string{cmd, "-h"}, &out, &errb)
		u := out.String() + errb.String()
		if strings.Contains(u, "unknown command") {
			u = ""
		}
		usages[cmd] = u
		return u
	}
	lines := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, f)
		n, problems := checkCommandLines(rel, string(b), usageOf)
		lines += n
		for _, p := range problems {
			t.Error(p)
		}
	}
	t.Logf("%d command lines checked in %d files", lines, len(files))
	assert.GreaterOrEqual(t, lines, 10, "the documentation's command lines were found")
}

// inlineCommand is an inline code span that runs the acceptance binary.
var inlineCommand = regexp.MustCompile("`(?:\\./bin/)?acceptance ([a-z][a-z-]*[^`]*)`")

// checkCommandLines checks one Markdown file's command lines: how many it
// checked, and what is wrong with them.
func checkCommandLines(file, text string, usageOf func(string) string) (int, []string) {
	var problems []string
	check := func(n int, words []string, line string) bool {
		cmd := words[0]
		u := usageOf(cmd)
		if u == "" {
			problems = append(problems, fmt.Sprintf("%s:%d: no command %q: %s", file, n, cmd, line))
			return false
		}
		for _, w := range words[1:] {
			if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
				continue
			}
			name := strings.TrimLeft(w, "-")
			name, _, _ = strings.Cut(name, "=")
			if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `\b`).MatchString(u) {
				problems = append(problems, fmt.Sprintf("%s:%d: `acceptance %s` has no flag --%s: %s", file, n, cmd, name, line))
			}
		}
		return true
	}
	inShell, lines := false, 0
	for i, line := range strings.Split(text, "\n") {
		n := i + 1
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inShell = !inShell && (trimmed == "```sh" || trimmed == "```bash")
			continue
		}
		if inShell {
			rest, ok := strings.CutPrefix(trimmed, "./bin/acceptance ")
			if !ok {
				rest, ok = strings.CutPrefix(trimmed, "acceptance ")
			}
			if !ok {
				continue
			}
			words := splitShell(rest)
			if len(words) > 0 && check(n, words, trimmed) {
				lines++
			}
			continue
		}
		for _, m := range inlineCommand.FindAllStringSubmatch(line, -1) {
			words := splitShell(m[1])
			if len(words) > 0 && check(n, words, m[0]) {
				lines++
			}
		}
	}
	return lines, problems
}

// The check catches an unknown command and an unknown flag, in a shell block
// and in an inline span, and passes known ones.
func TestCheckCommandLinesCatchesMistakes(t *testing.T) {
	t.Parallel()
	usage := func(cmd string) string {
		if cmd == "grade" {
			return "Usage of grade:\n  -out string\n  -parallel int\n"
		}
		return ""
	}
	text := "Run `acceptance grade --out x --parallel 2 dir` or:\n\n```sh\n./bin/acceptance grade --shard 1/2 dir\nacceptance gradee dir\n```\n\nNot checked: `acceptance` alone, `go test`.\n"
	n, problems := checkCommandLines("docs/x.md", text, usage)
	assert.Equal(t, 2, n)
	assert.Equal(t, []string{
		"docs/x.md:4: `acceptance grade` has no flag --shard: ./bin/acceptance grade --shard 1/2 dir",
		`docs/x.md:5: no command "gradee": acceptance gradee dir`,
	}, problems)
}

// splitShell splits a command line as sh would for these simple lines:
// quotes group, a # starting a word begins a comment.
func splitShell(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		case r == '#' && !inWord:
			return words
		case r == '\\' && !inWord:
			// a line continuation
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
