package report_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
	"github.com/osb-capstone/acceptance/harness/report/reporttest"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// signedBundle grades a tiny run into root/name with the journal bound to it.
func signedBundle(t *testing.T, root, keys, name, runID string, pass bool) string {
	t.Helper()
	dir := filepath.Join(root, name)
	meta := reporttest.FixtureMeta()
	meta.RunID = runID
	b, err := report.Open(dir, rubric.Course, meta, report.Options{Now: reporttest.FixedClock(), JournalKeys: keys})
	require.NoError(t, err)
	record := b.Results().Fail
	if pass {
		record = b.Results().Pass
	}
	require.NoError(t, record(rubric.M0, "m0", "contract"))
	require.NoError(t, record(rubric.Function, "m2", "outputs"))
	require.NoError(t, record(rubric.Isolation, "m1", "isolation"))
	_, err = b.Finalize()
	require.NoError(t, err)
	require.NoError(t, b.Close())
	return dir
}

func journalLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, report.JournalFile))
	require.NoError(t, err)
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func writeJournal(t *testing.T, dir string, lines []string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, report.JournalFile), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
}

func refused(t *testing.T, err error) []string {
	t.Helper()
	var je *report.JournalError
	require.True(t, errors.As(err, &je), "want a refused journal, got %v", err)
	return je.Problems
}

// TestRenderRefusesTheForgersJournal replays the forger: a submission
// appends the reference's results.jsonl lines to its own (and, in variants,
// edits a verdict, drops a failed line, writes an unsigned line, or claims the
// reference's run in run.json). `render` refuses each, naming the line, and
// writes no report; the honest bundles render.
func TestRenderRefusesTheForgersJournal(t *testing.T) {
	root, keys := t.TempDir(), filepath.Join(t.TempDir(), "keys")
	ref := signedBundle(t, root, keys, "reference", "run-ref-1", true)
	forger := signedBundle(t, root, keys, "hostile-forger", "run-forger-1", false)
	opts := report.Options{JournalKeys: keys}

	doc, err := report.RenderDir(ref, rubric.Course, opts)
	require.NoError(t, err)
	assert.Equal(t, rubric.Passed, reporttest.EntryRow(doc, rubric.M0).Verdict)
	_, err = report.RenderDir(forger, rubric.Course, opts)
	require.NoError(t, err, "an untouched bundle renders")
	st, err := os.Stat(filepath.Join(keys, "run-forger-1.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the key is the grader's alone")
	kst, err := os.Stat(keys)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), kst.Mode().Perm())
	assert.NotContains(t, strings.Join(journalLines(t, forger), ""), mustKey(t, keys, "run-forger-1"), "the key never enters the bundle")

	own, theirs := journalLines(t, forger), journalLines(t, ref)
	renderErr := func() error { _, err := report.RenderDir(forger, rubric.Course, opts); return err }
	with := func(lines []string) []string { writeJournal(t, forger, lines); return refused(t, renderErr()) }
	report0, err := os.ReadFile(filepath.Join(forger, report.JSONFile))
	require.NoError(t, err)

	// The attack: append the reference's lines.
	p := with(append(append([]string{}, own...), theirs...))
	require.Len(t, p, 3)
	assert.Contains(t, p[0], `line 4 (M0 passed) belongs to another run ("run-ref-1"), not this one ("run-forger-1")`)
	after, err := os.ReadFile(filepath.Join(forger, report.JSONFile))
	require.NoError(t, err)
	assert.Equal(t, report0, after, "a refused journal writes no report")

	// Edit a verdict in place (the MAC no longer matches).
	edited := append([]string{}, own...)
	edited[0] = strings.Replace(edited[0], `"verdict":"failed"`, `"verdict":"passed"`, 1)
	p = with(edited)
	assert.Equal(t, []string{"line 1 (M0 passed) is forged or edited: its signature does not verify under this run's key"}, p)

	// Drop a failed line: the sequence and the grader's line count show it.
	p = with([]string{own[0], own[2]})
	assert.Contains(t, p[0], "line 2 has sequence number 3 where 2 was due")
	p = with(own[:2])
	assert.Equal(t, []string{"the grader wrote 3 lines; the journal holds 2 signed ones (lines were removed)"}, p)

	// An unsigned line.
	p = with(append(append([]string{}, own...), `{"seq":4,"id":"cost","verdict":"passed","reason":"x","scenario":"s"}`))
	assert.Equal(t, []string{"line 4 is not signed: the grader did not write it"}, p)

	// Claim the reference's run wholesale: its journal and its run ID.
	writeJournal(t, forger, theirs)
	var meta map[string]any
	raw, _ := os.ReadFile(filepath.Join(forger, report.MetaFile))
	require.NoError(t, json.Unmarshal(raw, &meta))
	meta["run_id"] = "run-ref-1"
	raw, _ = json.Marshal(meta)
	require.NoError(t, os.WriteFile(filepath.Join(forger, report.MetaFile), raw, 0o644))
	p = refused(t, renderErr())
	assert.Equal(t, []string{`run run-ref-1 was graded into a bundle named "reference", not "hostile-forger": this bundle claims another's run`}, p)

	// A run ID that is a path, or that no grader made here.
	meta["run_id"] = "../../etc/passwd"
	raw, _ = json.Marshal(meta)
	require.NoError(t, os.WriteFile(filepath.Join(forger, report.MetaFile), raw, 0o644))
	assert.Error(t, renderErr())
	meta["run_id"] = "run-never"
	raw, _ = json.Marshal(meta)
	require.NoError(t, os.WriteFile(filepath.Join(forger, report.MetaFile), raw, 0o644))
	p = refused(t, renderErr())
	assert.Contains(t, p[0], `no key for run "run-never"`)
}

func mustKey(t *testing.T, keys, run string) string {
	t.Helper()
	k, err := report.JournalKeyOf(keys, run)
	require.NoError(t, err)
	return k
}

// TestFinalizeUndoesAJournalWrittenDuringTheRun: a submission appends
// another run's passing line while it is graded; the report is built from the
// grader's own record, says so, and the journal is restored (it verifies).
func TestFinalizeUndoesAJournalWrittenDuringTheRun(t *testing.T) {
	root, keys := t.TempDir(), filepath.Join(t.TempDir(), "keys")
	ref := signedBundle(t, root, keys, "reference", "run-ref-2", true)
	dir := filepath.Join(root, "student")
	meta := reporttest.FixtureMeta()
	meta.RunID = "run-student-2"
	b, err := report.Open(dir, rubric.Course, meta, report.Options{Now: reporttest.FixedClock(), JournalKeys: keys})
	require.NoError(t, err)
	require.NoError(t, b.Results().Fail(rubric.M0, "m0", "create answered 500"))
	f, err := os.OpenFile(filepath.Join(dir, report.JournalFile), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(journalLines(t, ref)[0] + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, b.Results().Pass(rubric.Function, "m2", "outputs"))

	doc, err := b.Finalize()
	require.NoError(t, err)
	require.NoError(t, b.Close())
	assert.Equal(t, rubric.Failed, reporttest.EntryRow(doc, rubric.M0).Verdict)
	assert.Contains(t, doc.JournalRefused, `line 2 (M0 passed) belongs to another run ("run-ref-2")`)
	assert.Len(t, journalLines(t, dir), 2)
	md, err := os.ReadFile(filepath.Join(dir, report.MarkdownFile))
	require.NoError(t, err)
	assert.Contains(t, string(md), "**Journal altered during the run:** "+render.Cell("results.jsonl was altered during the run"))
	require.NoError(t, report.VerifyJournal(dir, keys), "the restored journal verifies")
	assert.True(t, bytes.Contains([]byte(journalLines(t, dir)[0]), []byte(`"verdict":"failed"`)))

	// Keys live only in a private directory.
	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.Mkdir(open, 0o755))
	_, err = report.Open(filepath.Join(root, "other"), rubric.Course, meta, report.Options{JournalKeys: open})
	require.ErrorContains(t, err, "open to others")
}

// TestReassertUndoesARewrittenReport: the forger's daemon rewrites
// report.json and results.json to a full score after the grader wrote them;
// Reassert finds both and writes them again from the grader's record, and
// leaves an untouched bundle alone.
func TestReassertUndoesARewrittenReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "student")
	b, err := report.Open(dir, rubric.Course, reporttest.FixtureMeta(), report.Options{Now: reporttest.FixedClock(), JournalKeys: filepath.Join(t.TempDir(), "k")})
	require.NoError(t, err)
	require.NoError(t, b.Results().Fail(rubric.M0, "m0", "create answered 500"))
	require.NoError(t, b.Results().Pass(rubric.Function, "m2", "outputs"))
	doc, err := b.Finalize()
	require.NoError(t, err)
	require.NoError(t, b.Close())
	orig, err := os.ReadFile(filepath.Join(dir, report.JSONFile))
	require.NoError(t, err)

	changed, err := report.Reassert(dir, doc)
	require.NoError(t, err)
	assert.Empty(t, changed, "an untouched bundle is left alone")

	require.NoError(t, os.WriteFile(filepath.Join(dir, report.JSONFile), []byte(`{"verdict":"passed","score":{"earned":100,"measured":100}}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, report.GradescopeFile), []byte(`{"score":100}`), 0o644))
	changed, err = report.Reassert(dir, doc)
	require.NoError(t, err)
	assert.Equal(t, []string{report.JSONFile, report.GradescopeFile}, changed)
	now, err := os.ReadFile(filepath.Join(dir, report.JSONFile))
	require.NoError(t, err)
	assert.Equal(t, string(orig), string(now))
}
