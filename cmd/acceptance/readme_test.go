package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestREADMECommandsUseKnownFlags keeps the README's command lines true to
// the commands: every `./bin/acceptance <command> …` line in a shell block
// names a command that exists and only flags that command defines (as its
// -h lists them).
func TestREADMECommandsUseKnownFlags(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	require.NoError(t, err)
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
	inShell, lines := false, 0
	for n, line := range strings.Split(string(readme), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			inShell = !inShell && (trimmed == "```sh" || trimmed == "```bash")
			continue
		}
		if !inShell || !strings.HasPrefix(trimmed, "./bin/acceptance ") {
			continue
		}
		words := splitShell(trimmed)
		require.GreaterOrEqual(t, len(words), 2, "README line %d", n+1)
		cmd := words[1]
		u := usageOf(cmd)
		if !assert.NotEmpty(t, u, "README line %d: no command %q", n+1, cmd) {
			continue
		}
		lines++
		for _, w := range words[2:] {
			if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
				continue
			}
			name := strings.TrimLeft(w, "-")
			name, _, _ = strings.Cut(name, "=")
			assert.Regexp(t, regexp.MustCompile(`(?m)^  -`+regexp.QuoteMeta(name)+`\b`), u,
				"README line %d: `acceptance %s` has no flag --%s:\n%s", n+1, cmd, name, trimmed)
		}
	}
	assert.GreaterOrEqual(t, lines, 10, "the README's command lines were found")
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
