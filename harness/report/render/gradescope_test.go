package render

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

func gradescopeSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("gradescope.schema.json")
	require.NoError(t, err)
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource("gradescope.schema.json", doc))
	s, err := c.Compile("gradescope.schema.json")
	require.NoError(t, err)
	return s
}

func validateGradescope(t *testing.T, s *jsonschema.Schema, b []byte) map[string]any {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	require.NoError(t, s.Validate(inst), "results.json must follow Gradescope's spec:\n%s", b)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

type gsParsed struct {
	Score     float64        `json:"score"`
	ExtraData map[string]any `json:"extra_data"`
	Tests     []struct {
		Name      string         `json:"name"`
		Score     float64        `json:"score"`
		MaxScore  float64        `json:"max_score"`
		Status    string         `json:"status"`
		Output    string         `json:"output"`
		Tags      []string       `json:"tags"`
		ExtraData map[string]any `json:"extra_data"`
	} `json:"tests"`
}

func TestGradescopeResultsValid(t *testing.T) {
	t.Parallel()
	s := gradescopeSchema(t)
	for _, tc := range []struct {
		name string
		doc  report.Document
	}{
		{"unreviewed", reporttest.FixtureDoc(t)},
		{"reviewed", func() report.Document {
			d := reporttest.FixtureDoc(t)
			d.Final = report.ComputeFinal(d, &report.Judgments{Reviewer: "r", Entries: map[rubric.ID]report.Judgment{rubric.Cost: {Verdict: rubric.Passed, Points: 7.5}}})
			return d
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			require.NoError(t, WriteGradescope(&b, report.Scored(tc.doc)))
			validateGradescope(t, s, b.Bytes())
			var r gsParsed
			require.NoError(t, json.Unmarshal(b.Bytes(), &r))
			var max, sum float64
			for _, tt := range r.Tests {
				max += tt.MaxScore
				sum += tt.Score
				assert.LessOrEqual(t, tt.Score, tt.MaxScore, tt.Name)
				if tt.Status == "passed" {
					assert.Equal(t, tt.MaxScore, tt.Score, tt.Name)
				}
			}
			assert.InDelta(t, 100, max, 0.05, "max scores add up to the rubric's 100")
			assert.InDelta(t, r.Score, sum, 0.05, "the top-level score is the sum of the tests' (rounded) scores")
			byName := map[string]int{}
			for i, tt := range r.Tests {
				byName[strings.SplitN(tt.Name, ":", 2)[0]] = i
			}
			// A timeout never scores, and says so.
			bud := r.Tests[byName["budget"]]
			assert.Equal(t, 0.0, bud.Score)
			assert.Equal(t, "failed", bud.Status)
			assert.Contains(t, bud.Output, "a timeout never earns points")
			assert.Equal(t, map[string]any{"category": "timeout", "reason": "summary.json not written within 120s"}, bud.ExtraData["not_measured"])
			// Not measured entries are explained in output and extra_data.
			inj := r.Tests[byName["injection"]]
			assert.Contains(t, inj.Output, "Not measured (precondition_unmet)")
			assert.Equal(t, "precondition_unmet", inj.ExtraData["category"])
			// A measured failure scores 0; a pass scores its weight.
			assert.Equal(t, 0.0, r.Tests[byName["network"]].Score)
			assert.Equal(t, "passed", r.Tests[byName["function"]].Status)
			assert.Equal(t, 5.0, r.Tests[byName["function"]].Score)
			assert.Contains(t, r.Tests[byName["function"]].Tags, "scoring:closed_loop")
			assert.Contains(t, r.Tests[byName["function"]].Tags, "provenance:measured")
		})
	}
}

func TestGradescopeRejectsBadShapes(t *testing.T) {
	t.Parallel()
	s := gradescopeSchema(t)
	for _, bad := range []string{
		`{"tests":[{"name":"x","status":"ok","score":1}]}`,
		`{"score":1,"visibility":"public"}`,
		`{"score":"1"}`,
		`{"tests":[{"name":"no score"}]}`,
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		require.NoError(t, err)
		assert.Error(t, s.Validate(inst), bad)
	}
}

// The fallback results.json of the README's run_autograder is valid too.
func TestGradescopeFallbackValid(t *testing.T) {
	t.Parallel()
	validateGradescope(t, gradescopeSchema(t), []byte(`{"score": 0, "output": "the acceptance suite could not grade this submission; see the autograder output", "tests": []}`))
}

func TestGoldenGradescope(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	require.NoError(t, WriteGradescope(&b, report.Scored(reporttest.FixtureDoc(t))))
	reporttest.Golden(t, "results.json", b.Bytes())
}
