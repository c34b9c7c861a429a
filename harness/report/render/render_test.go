package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

func TestGoldenMarkdown(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	require.NoError(t, WriteMarkdown(&b, reporttest.FixtureDoc(t)))
	reporttest.Golden(t, "report.md", []byte(b.String()))
}

func TestGoldenJSON(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	require.NoError(t, WriteJSON(&b, reporttest.FixtureDoc(t)))
	reporttest.Golden(t, "report.json", []byte(b.String()))
}

func TestGoldenJUnit(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	require.NoError(t, WriteJUnit(&b, reporttest.FixtureDoc(t)))
	reporttest.Golden(t, "junit.xml", []byte(b.String()))
	var parsed junitSuites
	require.NoError(t, xml.Unmarshal([]byte(b.String()), &parsed), "junit.xml is well-formed")
}

func entryFromJSON(t *testing.T, js string, id rubric.ID) map[string]any {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(js), &doc))
	for _, list := range []string{"criteria", "milestones", "drills"} {
		for _, e := range doc[list].([]any) {
			m := e.(map[string]any)
			if m["id"] == string(id) {
				return m
			}
		}
	}
	t.Fatalf("%s not in report.json", id)
	return nil
}

// A not-measured outcome shows up as not measured WITH ITS REASON in every output.
func TestNotMeasuredReasonInEveryOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	b, err := report.Open(dir, rubric.Course, reporttest.FixtureMeta(), report.Options{Now: reporttest.FixedClock()})
	require.NoError(t, err)
	defer b.Close()
	reason := "server answered 202 to 3 concurrent creates (observed no capacity limit)"
	require.NoError(t, b.Results().NotMeasured(rubric.D3, "d3: capacity", rubric.CategoryUnsupportedByTarget, reason))
	require.NoError(t, b.Results().Pass(rubric.D2, "d2", "404 seen, no retry"))
	_, err = b.Finalize()
	require.NoError(t, err)
	md, js, junit := reporttest.ReadAll(t, dir)

	assert.Contains(t, md, "| **D3** Drill 3 · 429 insufficient capacity | not measured (unsupported_by_target) | "+Cell(reason)+" |")

	e := entryFromJSON(t, js, rubric.D3)
	assert.Equal(t, "not_measured", e["verdict"])
	assert.Equal(t, "unsupported_by_target", e["category"])
	assert.Equal(t, reason, e["reason"])

	var parsed junitSuites
	require.NoError(t, xml.Unmarshal([]byte(junit), &parsed))
	found := false
	for _, s := range parsed.Suites {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, "D3:") {
				found = true
				require.NotNil(t, c.Skipped)
				assert.Equal(t, "not measured (unsupported_by_target): "+reason, c.Skipped.Message)
				assert.Nil(t, c.Error, "not measured is never an error")
				assert.Nil(t, c.Failure)
			}
			if c.Skipped != nil {
				assert.NotEmpty(t, c.Skipped.Message, "every skipped case says why (%s)", c.Name)
			}
		}
	}
	assert.True(t, found)
	// An entry nothing measured says so too.
	m1 := entryFromJSON(t, js, rubric.M1)
	assert.Equal(t, rubric.NoScenarioReason, m1["reason"])
}

// TestJUnitCleansSubjectText: every string written into junit.xml — titles,
// reasons, evidence, reproduce lines, the subject, run id and target, in
// attributes and in CDATA bodies — may carry subject-derived bytes. Control
// characters, bytes that are not UTF-8, non-characters and "]]>" must not
// make the file unparseable; they show as visible escapes.
func TestJUnitCleansSubjectText(t *testing.T) {
	t.Parallel()
	nasty := "a\x00b\x01c\x1b[31mred\x7f \xff\xfe \ufffe\uffff ]]> <tag> & \"q\" \ttab\nnl ok:é"
	d := reporttest.FixtureDoc(t)
	d.RunID, d.Subject, d.Target = nasty, nasty, nasty
	verdicts := map[rubric.Verdict]bool{}
	for _, rows := range [][]report.EntryRow{d.Criteria, d.Milestones, d.Drills} {
		for i := range rows {
			rows[i].Title, rows[i].Reason, rows[i].Reproduce = nasty, nasty, nasty
			rows[i].Evidence = append(rows[i].Evidence, nasty)
			verdicts[rows[i].Verdict] = true
		}
	}
	for _, v := range []rubric.Verdict{rubric.Failed, rubric.NotMeasured, rubric.Passed} {
		require.True(t, verdicts[v], "the fixture has a %s row (failure, skipped and plain cases are all covered)", v)
	}
	var b strings.Builder
	require.NoError(t, WriteJUnit(&b, d))
	out := b.String()
	assert.True(t, utf8.ValidString(out), "junit.xml is UTF-8")

	var parsed junitSuites
	require.NoError(t, xml.Unmarshal([]byte(out), &parsed), "junit.xml stays well-formed")
	// A full token walk too: Unmarshal skips what the structs do not name.
	dec := xml.NewDecoder(strings.NewReader(out))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	want := `a\x00b\x01c\x1b[31mred\x7f \xff\xfe \ufffe\uffff ]]> <tag> & "q" ` + "\ttab\nnl ok:é"
	assert.Equal(t, "acceptance "+want, parsed.Name)
	require.NotEmpty(t, parsed.Suites)
	var subject string
	for _, p := range parsed.Suites[0].Properties {
		if p.Name == "subject" {
			subject = p.Value
		}
	}
	assert.Equal(t, want, subject)
	var sawFailure, sawSkipped bool
	for _, s := range parsed.Suites {
		for _, c := range s.Cases {
			assert.Contains(t, c.Name, want)
			require.NotNil(t, c.SystemOut)
			assert.Contains(t, c.SystemOut.Text, "reason: "+want, "CDATA body round-trips, \"]]>\" included")
			assert.Contains(t, c.SystemOut.Text, "evidence: "+want)
			if c.Failure != nil {
				sawFailure = true
				assert.Contains(t, c.Failure.Message, want)
				assert.Contains(t, c.Failure.Text, "reproduce: "+want)
			}
			if c.Skipped != nil {
				sawSkipped = true
				assert.Contains(t, c.Skipped.Message, want)
			}
		}
	}
	assert.True(t, sawFailure && sawSkipped)
	// Clean text passes through untouched.
	assert.Equal(t, "plain ]]> text\t\r\n é ✓", xmlText("plain ]]> text\t\r\n é ✓"))
}

// A renderer given a document whose score the core did not set refuses; it
// never computes one itself.
func TestRenderersNeedTheCoresScore(t *testing.T) {
	t.Parallel()
	d := reporttest.FixtureDoc(t)
	var b bytes.Buffer
	assert.ErrorContains(t, WriteHTML(&b, d), "report.Scored")
	assert.ErrorContains(t, WriteGradescope(&b, d), "report.Scored")
	require.NoError(t, WriteHTML(&b, report.Scored(d)))
}
