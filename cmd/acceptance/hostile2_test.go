package main

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// hostile2Set is the second round: each the student plus ONE attack of
// issue 26's "Why" (the attacks: fixtures/submissions/hostile2_attacks.py).
var hostile2Set = []hostileCase{
	// Thousands of idle connections to the lifecycle port and the CSV stub:
	// the per-box cap and the servers' timeouts bound them; it costs the
	// attacker only (the honest members' checks above).
	{dir: "hostile2-fd-flood", attack: "fd-flood", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			assert.Positive(t, h2Num(r["targets"]), "the flood found no loopback target")
		}
	}},
	// A sandbox without resourceLimits, loaded and left behind, and 70 more
	// (the bundled server's quota is 64 live sandboxes a tenant).
	{dir: "hostile2-runaway", attack: "runaway", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			assert.Less(t, h2Num(r["extra_accepted"]), 70.0, "70 more sandboxes were accepted: no per-submission quota")
			if in, ok := r["inside"].([]any); ok && len(in) > 1 {
				assert.NotEqual(t, "max", in[1], "a sandbox created without resourceLimits got no pids limit")
			}
		}
	}},
	// Its contract command ignores SIGTERM past --subject-timeout: M0 fails
	// for it (the grader kills it); nobody else waits on it.
	{dir: "hostile2-stall", attack: "stall", fail: []string{"M0"}},
	// The pvc volume: a disk quota, nosuid; removed at the end (checked
	// above, with the setuid file).
	{dir: "hostile2-volume", attack: "volume", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			if v, err := strconv.Atoi(fmt.Sprint(r["fill_mib"])); err == nil {
				assert.Less(t, v, 1300, "1,300 MiB written to a named volume: no disk quota")
			}
			if fmt.Sprint(r["mounted"]) != "0" && r["mounted"] != nil {
				assert.Equal(t, fmt.Sprint(r["mounted"]), fmt.Sprint(r["nosuid_mounts"]), "the named volume is mounted without nosuid")
			}
		}
	}},
	// The keyless server proxy into others' sandboxes: the guard refuses it.
	{dir: "hostile2-keyless", attack: "keyless-proxy", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		for _, r := range b.attacks {
			assert.EqualValues(t, 0, r["commands_ran"], "the keyless proxy ran commands in other submissions' sandboxes: %v", r["ran_in"])
			if m, ok := r["made_up_ids"].(map[string]any); ok {
				assert.Nil(t, m["200"], "a made-up sandbox id answered 200 through the keyless proxy")
			}
			if h2Num(r["ids_tried"]) == 0 {
				t.Logf("the attack learned no other sandbox's id (sources %v); made-up ids answered %v", r["sources"], r["made_up_ids"])
			}
		}
	}},
	// 100,000 empty directories and 3,000 files: the copy-out counts every
	// entry and bounds its dropped list.
	{dir: "hostile2-dirbomb", attack: "", check: func(t *testing.T, h *hostileRun, b *hostileBundle) {
		dirs, biggest := 0, int64(0)
		_ = filepath.WalkDir(b.dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				dirs++
			} else if info, err := d.Info(); err == nil && (d.Name() == "run.json" || d.Name() == "invocation.json" || strings.HasSuffix(d.Name(), "dropped.json")) && info.Size() > biggest {
				biggest = info.Size()
			}
			return nil
		})
		assert.Less(t, dirs, 2000, "the copy-out re-made the submission's empty directories in the bundle")
		assert.Less(t, biggest, int64(256<<10), "a command record (its dropped list) is unbounded")
	}},
	// Console, progress.log and Markdown injection: its tests fail and its
	// run reports an error; what must hold is checked for the whole class
	// above ("everything the submissions wrote is inert").
	{dir: "hostile2-injection", attack: "", fail: []string{"maintainability"}},
	// Unknown manifest keys holding ESC/OSC bytes and forged lines: checked
	// with the console and every file.
	{dir: "hostile2-yaml-keys"},
}

// hostile2MayBeRefused are members whose manifest the grader may refuse
// outright (not graded: no bundle); the others must have a report.
var hostile2MayBeRefused = map[string]bool{"hostile2-yaml-keys": true}

func h2Num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func h2JSONStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var s []string
		for _, y := range x {
			s = append(s, h2JSONStrings(y)...)
		}
		return s
	case map[string]any:
		var s []string
		for k, y := range x {
			s = append(s, k)
			s = append(s, h2JSONStrings(y)...)
		}
		return s
	}
	return nil
}

// The lines the injection forges (fixtures/submissions/hostile2_attacks.py).
var h2ForgedLines = []*regexp.Regexp{
	// at a line's start, or after a console label ("reference: ")
	regexp.MustCompile(`(?m)^(?:\S+: )?\s*class summary: all 2 passed`),
	regexp.MustCompile(`(?m)^(?:\S+: )?\s*passed\s+Instructions inside the data`),
}

// h2InertProblems: raw control characters (C0 but tab and newline, DEL, C1)
// and lines the injection forges, in text a person reads.
func h2InertProblems(text string) []string {
	var probs []string
	counts := map[string]int{}
	for _, r := range text {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			counts[fmt.Sprintf("%U", r)]++
		}
	}
	if !utf8.ValidString(text) {
		counts["invalid UTF-8"]++
	}
	if len(counts) > 0 {
		probs = append(probs, fmt.Sprintf("raw control characters %v", counts))
	}
	for _, re := range h2ForgedLines {
		if m := re.FindString(text); m != "" {
			probs = append(probs, fmt.Sprintf("a line the grader did not write: %q", strings.TrimSpace(m)))
		}
	}
	return probs
}

var (
	h2MDRawHTML  = regexp.MustCompile(`<img\b|<script\b`)
	h2MDJSLink   = regexp.MustCompile(`\]\(\s*javascript:`)
	h2MDAutoLink = regexp.MustCompile(`<javascript:`)
)

// h2MarkdownProblems: raw HTML, a javascript: link, or a table row with more
// cells than its header (a pipe a submission's `\|` turned into a column),
// split as marked does (a pipe after an odd number of backslashes is text).
func h2MarkdownProblems(text string) []string {
	var probs []string
	if m := h2MDRawHTML.FindString(text); m != "" {
		probs = append(probs, fmt.Sprintf("raw HTML from a submission: %q", m))
	}
	if h2MDJSLink.MatchString(text) || h2MDAutoLink.MatchString(text) {
		probs = append(probs, "a javascript: link")
	}
	header := 0
	for _, line := range strings.Split(text, "\n") {
		l := strings.TrimSpace(line)
		if !strings.HasPrefix(l, "|") {
			header = 0
			continue
		}
		n := h2MDCells(l)
		if header == 0 {
			header = n
			continue
		}
		if n > header {
			probs = append(probs, fmt.Sprintf("a table row with %d cells under a %d-cell header: %s", n, header, tail(l, 200)))
		}
	}
	return probs
}

func h2MDCells(row string) int {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	cells, bs := 1, 0
	for _, r := range row {
		switch {
		case r == '\\':
			bs++
			continue
		case r == '|' && bs%2 == 0:
			cells++
		}
		bs = 0
	}
	return cells
}

// TestHostile2Checkers (no sandboxes): the sink checks of
// TestHostileCalibration2 catch each payload of hostile2-injection as main
// 851965b wrote it, and pass text that holds it inertly.
func TestHostile2Checkers(t *testing.T) {
	// progress.log and the console on main: a forged line after a newline.
	assert.NotEmpty(t, h2InertProblems("test.unit exited 1\nclass summary: all 2 passed\n"))
	assert.NotEmpty(t, h2InertProblems("reference: passed        Instructions inside the data are treated as data  [D4, injection]"))
	assert.NotEmpty(t, h2InertProblems("x \x1b[2J y"), "raw ESC")
	assert.NotEmpty(t, h2InertProblems("x \x07\r y"), "raw BEL and CR")
	assert.NotEmpty(t, h2InertProblems("x \u009b y"), "raw C1 CSI")
	assert.Empty(t, h2InertProblems(`test.unit exited 1 ("\n\nclass summary: all 2 passed\npassed … \x1b[2J")`), "escaped, on one line")
	assert.Empty(t, h2InertProblems("class summary: 10 submissions, 3 not passed\n\tpassed 0"))
	// report.md on main: \| became \\| (a new cell in marked), raw HTML, a javascript: link.
	hdr := "| entry | verdict | reason |\n|---|---|---|\n"
	assert.NotEmpty(t, h2MarkdownProblems(hdr+"| **M4** | **FAILED** | a \\\\| b |\n"), "\\\\| splits a cell")
	assert.NotEmpty(t, h2MarkdownProblems(hdr+"| **M4** | **FAILED** | <img src=x onerror=alert(1)> |\n"))
	assert.NotEmpty(t, h2MarkdownProblems(hdr+"| **M4** | **FAILED** | [fix](javascript:alert(1)) |\n"))
	assert.Empty(t, h2MarkdownProblems(hdr+"| **M4** | **FAILED** | a \\\\\\| b &lt;img src=x onerror=alert(1)&gt; \\[fix\\]\\(javascript:alert(1)\\) |\n"))
	assert.Equal(t, 3, h2MDCells("| a | b \\| c | d |"))
	assert.Equal(t, 4, h2MDCells("| a | b \\\\| c | d |"))
}
