package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
)

// shardClass are the calibration submissions TestGradeThreeShardsEqualOneCall
// grades: by their names' hashes they fall in shards 1, 2, 2 and 3 of 3.
var shardClass = []string{"reference", "student", "bad-empty", "bad-lying-contract"}

type gradedDoc struct {
	report.Document
	dir string
}

func (g gradedDoc) Bundle() string { return g.dir }

// docsBySubmission reads every bundle of a class directory by submission identity.
func docsBySubmission(t *testing.T, class string) map[string]gradedDoc {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(class, "[0-9][0-9]-*"))
	require.NoError(t, err)
	out := map[string]gradedDoc{}
	for _, b := range m {
		d, err := report.ReadDocument(b)
		require.NoError(t, err, b)
		require.NotEmpty(t, d.Submission, "%s records its submission's identity", b)
		out[d.Submission] = gradedDoc{Document: d, dir: b}
	}
	return out
}

func entryVerdicts(d report.Document) map[string]string {
	out := map[string]string{}
	for _, r := range d.AllEntries() {
		out[string(r.ID)] = string(r.Verdict)
	}
	return out
}

// classCounts is class.md's tally line ("Passed 1, not passed 2, incomplete 1…").
func classCounts(md string) string {
	for _, l := range bytes.Split([]byte(md), []byte("\n")) {
		if bytes.HasPrefix(l, []byte("Passed ")) {
			return string(l)
		}
	}
	return ""
}
