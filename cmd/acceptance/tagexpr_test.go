package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/cucumber/godog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/features"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// tagsExcept is the godog tag expression selecting the scenarios tagged with
// one of alts and with none of not. godog splits on "," (or) before "&&"
// (and) and has no grouping, so "A,B && ~@large" keeps A's @large scenarios:
// each alternative carries every exclusion ("A && ~@large,B && ~@large").
// drillTags are the tags of every drill of the course (@drill:D1 …), in
// course order: a new drill is in them without a test naming it.
func drillTags() []string {
	var out []string
	for _, e := range rubric.Course.OfKind(rubric.KindDrill) {
		out = append(out, e.Tag())
	}
	return out
}

func tagsExcept(alts []string, not ...string) string {
	terms := make([]string, len(alts))
	for i, a := range alts {
		t := []string{a}
		for _, n := range not {
			t = append(t, "~"+n)
		}
		terms[i] = strings.Join(t, " && ")
	}
	return strings.Join(terms, ",")
}

// dockerCalibrationTags limits the docker calibration to the scenarios the
// defects ride on: D2 (bad-retry-gone), M1 and M2 (bad-no-destroy), D5
// (bad-no-reap), D1 (bad-retry-forever), D3 (bad-no-backoff), D4's
// injection (bad-obey-data: the injection scenario's tags, so not the report
// scenario, which feeds function). The 50 MB input is no defect's target.
var dockerCalibrationTags = tagsExcept([]string{"@milestone:M1", "@milestone:M2", "@drill:D2", "@drill:D5", "@drill:D1", "@drill:D3", "@drill:D4 && @criterion:injection"}, "@large")

// offlineRealTargetTags is the real-target grade of the reference
// (TestRunAgainstURLTarget): the closed loop and the analysis,
// without the 50 MB input.
var offlineRealTargetTags = tagsExcept([]string{"@milestone:M0", "@milestone:M1", "@milestone:M2"}, "@large")

// godogSelects runs godog over the suite's features with tag expression
// expr, every scenario stopped in its Before hook (nothing runs), and returns
// the tags of each scenario godog selected: godog's own matcher decides.
func godogSelects(t *testing.T, expr string) [][]string {
	t.Helper()
	var mu sync.Mutex
	var got [][]string
	stop := errors.New("selected; not run")
	godog.TestSuite{
		Name: "tag-selection",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			sc.Before(func(ctx context.Context, p *godog.Scenario) (context.Context, error) {
				var tags []string
				for _, tg := range p.Tags {
					tags = append(tags, tg.Name)
				}
				mu.Lock()
				got = append(got, tags)
				mu.Unlock()
				return ctx, stop
			})
		},
		Options: &godog.Options{Format: "progress", Output: io.Discard, NoColors: true, FS: features.FS, Paths: []string{"."}, Tags: expr},
	}.Run()
	return got
}

// excludedBy is every tag expr negates (~@x), without the "~".
func excludedBy(expr string) []string {
	var out []string
	for _, or := range strings.Split(expr, ",") {
		for _, term := range strings.Split(or, "&&") {
			if t, ok := strings.CutPrefix(strings.TrimSpace(term), "~"); ok && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// tagExprInText finds quoted tag expressions that exclude something.
var tagExprInText = regexp.MustCompile("['\"`]([@~][^'\"`\\n]*~@[^'\"`\\n]*)['\"`]")

// builtTagExpressions is every tag expression with an exclusion that the
// project writes: the ones its tests build, and every one quoted in its
// docs, scripts and tests (found by tagExprInText). Left out: the dated run
// records (harness/fidelity/runs, and FIDELITY.md built from them) say how a
// past run was made; tags_test.go and this file hold malformed and
// hand-picked ones on purpose.
func builtTagExpressions(t *testing.T) map[string][]string {
	t.Helper()
	found := map[string][]string{}
	add := func(where, expr string) { found[expr] = append(found[expr], where) }
	add("dockerCalibrationTags", dockerCalibrationTags)
	add("hostileTags", hostileTags)
	add("offlineRealTargetTags", offlineRealTargetTags)
	root := filepath.Join("..", "..")
	var files []string
	for _, pat := range []string{"*.md", "Makefile", "docs/*.md", ".ci/*", "cmd/acceptance/*.go", "fixtures/*/*.md", "fixtures/*/*/*.md",
		"harness/*/*.md", "harness/*/*/*.md", "harness/*/*/*/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pat))
		require.NoError(t, err)
		files = append(files, m...)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(rel, "harness/fidelity/") || rel == "cmd/acceptance/tags_test.go" || rel == "cmd/acceptance/tagexpr_test.go" {
			continue
		}
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range tagExprInText.FindAllStringSubmatch(string(b), -1) {
			add(rel, m[1])
		}
	}
	return found
}

// Every tag expression the project writes means what it says: no scenario
// carrying a tag the expression excludes (~@large, ~@agent) is selected by
// godog's own matcher, and the scenario count `run` shows (progress.go's
// reading of the expression) is godog's.
func TestTagExpressionsExcludeWhatTheySay(t *testing.T) {
	t.Parallel()
	exprs := builtTagExpressions(t)
	require.Contains(t, exprs, dockerCalibrationTags)
	require.Greater(t, len(exprs), 5, "the sweep found the project's expressions")
	keys := make([]string, 0, len(exprs))
	for e := range exprs {
		keys = append(keys, e)
	}
	sort.Strings(keys)
	for _, expr := range keys {
		where := strings.Join(exprs[expr], ", ")
		if !assert.NoError(t, checkTags(expr), "%q (%s)", expr, where) {
			continue
		}
		sel := godogSelects(t, expr)
		if !strings.Contains(where, "/") { // one the tests build selects something; a quoted one may be an edge case
			assert.NotEmpty(t, sel, "%q (%s) selects nothing", expr, where)
		}
		assert.Equal(t, len(sel), countScenarios(expr), "%q (%s): run's scenario count differs from godog's selection", expr, where)
		for _, x := range excludedBy(expr) {
			for _, tags := range sel {
				assert.NotContains(t, tags, x, "%q (%s) excludes %s, but godog runs a scenario tagged %v", expr, where, x, tags)
			}
		}
	}
}

// The checker catches the mistake it is for: "A,B && ~@large" runs A's
// @large scenario under godog; tagsExcept's form does not.
func TestTagExpressionCheckCatchesPrecedenceMistake(t *testing.T) {
	t.Parallel()
	wrong := "@milestone:M2,@milestone:M1 && ~@large"
	large := 0
	for _, tags := range godogSelects(t, wrong) {
		if slices.Contains(tags, "@large") {
			large++
		}
	}
	assert.Positive(t, large, "godog splits on , before &&: M2's @large scenario runs")
	right := tagsExcept([]string{"@milestone:M2", "@milestone:M1"}, "@large")
	assert.Equal(t, "@milestone:M2 && ~@large,@milestone:M1 && ~@large", right)
	sel := godogSelects(t, right)
	assert.NotEmpty(t, sel)
	for _, tags := range sel {
		assert.NotContains(t, tags, "@large")
	}
	assert.Equal(t, countScenarios("@milestone:M2,@milestone:M1")-large, len(sel))
}

// TestDrillTags: every drill of the course, as a tag godog matches.
func TestDrillTags(t *testing.T) {
	tags := drillTags()
	assert.Len(t, tags, len(rubric.Course.OfKind(rubric.KindDrill)))
	assert.Contains(t, tags, "@drill:D1")
	for _, tag := range tags {
		assert.True(t, strings.HasPrefix(tag, "@drill:"), tag)
	}
}

// The docker calibration selects D4's injection scenarios (the one that
// bad-obey-data fails, and the agent's, not measured without a model) and
// not D4's report scenario, which feeds function: no scenario of D4 without
// @criterion:injection runs.
func TestDockerCalibrationTagsSelectTheInjectionScenarios(t *testing.T) {
	t.Parallel()
	injection := 0
	for _, tags := range godogSelects(t, dockerCalibrationTags) {
		if !slices.Contains(tags, "@drill:D4") {
			continue
		}
		assert.Contains(t, tags, "@criterion:injection", "a D4 scenario the docker calibration runs: %v", tags)
		injection++
	}
	assert.GreaterOrEqual(t, injection, 1, "the injection scenario is selected")
}
