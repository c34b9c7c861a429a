package main

import (
	"encoding/csv"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// Integration tests of the suite against a student-style submission written
// with the official Python SDK (fixtures/submissions/student/student_subject.py): the
// good submission must pass, and each deliberate flaw must be caught by the
// criterion the course names for it. Every test runs the whole `acceptance
// run` (runMain: bundled server in-process, real sandboxes) with only the
// scenarios it needs, and checks that no sandbox is left afterwards.

// salesTruth counts the data rows of the sales fixture and the mean of its
// revenue column with encoding/csv (plain UTF-8, comma, header first).
func salesTruth(t *testing.T, path string) (rows int, meanRevenue float64) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.NotEmpty(t, recs)
	col := -1
	for i, h := range recs[0] {
		if h == "revenue" {
			col = i
		}
	}
	require.GreaterOrEqual(t, col, 0, "sales.csv has a revenue column")
	total := 0.0
	for _, r := range recs[1:] {
		v, err := strconv.ParseFloat(r[col], 64)
		require.NoError(t, err)
		total += v
	}
	rows = len(recs) - 1
	return rows, total / float64(rows)
}
