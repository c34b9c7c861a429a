package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/features"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// lineNumbers masks ":<line>" so that editing a step file above a step
// function does not fail the golden check; `make rubric` refreshes them.
var lineNumbers = regexp.MustCompile(`:\d+\b`)

// docs/rubric.md is `acceptance rubric --format md` (regenerate: make rubric).
func TestRubricIndexGolden(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"rubric", "--format", "md"}, &out, &errb), errb.String())
	want, err := os.ReadFile(filepath.Join("..", "..", "docs", "rubric.md"))
	require.NoError(t, err)
	if lineNumbers.ReplaceAllString(string(want), ":N") != lineNumbers.ReplaceAllString(out.String(), ":N") {
		t.Errorf("docs/rubric.md is stale: run `make rubric` and review the diff (the rubric, a feature or a step changed)")
	}
}

// Every entry a target can measure has a scenario; every step of every
// scenario has a definition; every definition's file:line is the line that
// declares its function.
func TestRubricIndexTiesEntriesToFunctions(t *testing.T) {
	t.Parallel()
	idx, err := buildRubricIndex(rubric.Course, features.FS)
	require.NoError(t, err)
	require.Len(t, idx.Entries, len(rubric.Course.All()))
	sources := map[string][]string{}
	steps := 0
	for _, e := range idx.Entries {
		re, _ := rubric.Course.Get(e.ID)
		if re.NeedsFeature() {
			assert.NotEmpty(t, e.Scenarios, "%s: measurable but no scenario is tagged with it", e.ID)
		}
		for _, sc := range e.Scenarios {
			assert.Regexp(t, `^features/.+\.feature$`, sc.Feature)
			assert.Positive(t, sc.Line)
			for _, st := range sc.Steps {
				steps++
				if !assert.NotEmpty(t, st.Func, "%s:%d %q has no step definition", sc.Feature, st.Line, st.Text) {
					continue
				}
				lines, ok := sources[st.File]
				if !ok {
					b, err := os.ReadFile(filepath.Join("..", "..", st.File))
					require.NoError(t, err, "%s names %s", st.Func, st.File)
					lines = strings.Split(string(b), "\n")
					sources[st.File] = lines
				}
				require.Less(t, st.FLine-1, len(lines), "%s:%d", st.File, st.FLine)
				src := lines[st.FLine-1]
				name := st.Func[strings.LastIndex(st.Func, ".")+1:]
				if strings.HasPrefix(name, "func") { // a closure: the line holds its func literal
					assert.Contains(t, src, "func(", "%s:%d for %s", st.File, st.FLine, st.Func)
				} else {
					assert.Regexp(t, `^func (\([^)]*\) )?`+regexp.QuoteMeta(name)+`\(`, src, "%s:%d for %s", st.File, st.FLine, st.Func)
				}
			}
		}
	}
	assert.Greater(t, steps, 50)
	// Weights come from the one scoring computation: the graded entries' shares sum to 100.
	sum := 0.0
	for _, e := range idx.Entries {
		if e.Kind != rubric.KindScoring {
			sum += e.Weight
		}
	}
	assert.InDelta(t, 100, sum, 0.1)
}

func TestRubricCommandFormats(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	require.Equal(t, 0, dispatch([]string{"rubric", "--format", "json"}, &out, &errb), errb.String())
	var idx rubricIndex
	require.NoError(t, json.Unmarshal(out.Bytes(), &idx))
	require.NotEmpty(t, idx.Entries)
	assert.Equal(t, rubric.ID("function"), idx.Entries[0].ID)

	out.Reset()
	require.Equal(t, 0, dispatch([]string{"rubric"}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "network  ")
	assert.Regexp(t, `→ steps\.\S+ steps/\S+\.go:\d+`, out.String())

	errb.Reset()
	assert.Equal(t, 2, dispatch([]string{"rubric", "--format", "yaml"}, &out, &errb))
	assert.Contains(t, errb.String(), `--format "yaml": want text, md or json`)
	errb.Reset()
	assert.Equal(t, 2, dispatch([]string{"rubric", "extra"}, &out, &errb))
	assert.Contains(t, errb.String(), `unexpected argument "extra"`)
}

// The index prints what the rubric says of each entry: whether it fails only
// on a violated property and what it rests on on a real target.
func TestRubricIndexPrintsViolationAndDependsOn(t *testing.T) {
	t.Parallel()
	idx, err := buildRubricIndex(rubric.Course, features.FS)
	require.NoError(t, err)
	var md strings.Builder
	require.NoError(t, writeIndexMarkdown(&md, idx))
	sections := strings.Split(md.String(), "\n### ")[1:]
	require.Len(t, sections, len(idx.Entries))
	for i, e := range idx.Entries {
		re, ok := rubric.Course.Get(e.ID)
		require.True(t, ok)
		assert.Equal(t, re.FailOnlyOnViolation, e.FailOnlyOnViolation, "%s", e.ID)
		assert.Equal(t, re.DependsOn, e.DependsOn, "%s", e.ID)
		sec := sections[i]
		require.True(t, strings.HasPrefix(sec, "`"+string(e.ID)+"`"), sec)
		assert.Equal(t, re.FailOnlyOnViolation, strings.Contains(sec, "fails only on a violated property"), "%s", e.ID)
		if re.Kind == rubric.KindScoring {
			assert.NotContains(t, sec, "Rests on", "%s", e.ID)
			continue
		}
		assert.Contains(t, sec, "- Rests on (real target): ", "%s", e.ID)
		for _, c := range re.DependsOn {
			assert.Contains(t, sec, string(c), "%s", e.ID)
		}
	}
}
