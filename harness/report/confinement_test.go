package report_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/report/render"
)

func writeRec(t *testing.T, dir, rel, body string) {
	t.Helper()
	p := filepath.Join(dir, report.EvidenceDir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
}

func TestReadConfinementHeader(t *testing.T) {
	dir := t.TempDir()
	assert.Nil(t, report.ReadConfinement(dir), "no command, no confinement line")

	writeRec(t, dir, "subject-sales/run.json", `{"result":{"ran_reference":true,"confinement":{"mode":"confined","refused_count":2}}}`)
	// A submission's own output named run.json is not a record.
	writeRec(t, dir, "subject-sales/out/run.json", `{"result":{"confinement":{"mode":"off","degraded":["forged"]}}}`)
	c := report.ReadConfinement(dir)
	require.NotNil(t, c)
	assert.Equal(t, "confined", c.Mode)
	assert.Equal(t, confine.LevelFull, c.Level, "a record from before levels: a box is level full")
	assert.Equal(t, 1, c.Commands)
	assert.Equal(t, 2, c.Refused)
	assert.Equal(t, []string{"evidence/subject-sales"}, c.RanReference)
	assert.Empty(t, c.Header())

	// A command that never started (the submission's time was spent before
	// it) ran nowhere: it does not turn a confined run into "off".
	writeRec(t, dir, "subject-test.integration/invocation.json", `{"result":{"timed_out":true,"not_started":true}}`)
	c = report.ReadConfinement(dir)
	assert.Equal(t, "confined", c.Mode)
	assert.Equal(t, 1, c.Commands)
	assert.Empty(t, c.Header())

	writeRec(t, dir, "subject-contract/invocation.json", `{"result":{"confinement":{"mode":"partial","degraded":["cgroup memory: controller not available on this host"]}}}`)
	c = report.ReadConfinement(dir)
	assert.Equal(t, "partial", c.Mode)
	assert.Contains(t, c.Header(), "Confinement PARTIAL")
	assert.Contains(t, c.Header(), "cgroup memory: controller not available on this host (1 of 2 commands)")

	writeRec(t, dir, "subject-test.unit/invocation.json", `{"result":{"confinement":{"mode":"off","degraded":["confinement: --insecure-no-confinement was given"]}}}`)
	c = report.ReadConfinement(dir)
	assert.Equal(t, "off", c.Mode)
	var md, html bytes.Buffer
	d := report.Document{Confinement: c}
	require.NoError(t, render.WriteMarkdown(&md, d))
	assert.Contains(t, md.String(), "> **Confinement OFF")
	assert.Equal(t, confine.LevelNone, c.Level)
	assert.Equal(t, confine.Lacks(confine.LevelNone), c.Lacks)
	assert.Contains(t, md.String(), "| Confinement | level none, off (3 commands, 2 connections refused) |")
	assert.Contains(t, md.String(), "| Ran the bundled reference | "+render.Cell("evidence/subject-sales")+" |")
	require.NoError(t, render.WriteHTML(&html, report.Scored(d)))
	assert.Contains(t, html.String(), `id="confinement"`)
	var js bytes.Buffer
	require.NoError(t, render.WriteJSON(&js, d))
	assert.Contains(t, js.String(), `"confinement": {`)
	assert.Contains(t, js.String(), `"level": "none"`)
	assert.Contains(t, html.String(), "Confinement: level none, off")
}

// A uid-level command makes the run's level uid (the weakest), and the
// header says what that level lacks.
func TestReadConfinementLevelUID(t *testing.T) {
	dir := t.TempDir()
	writeRec(t, dir, "subject-sales/run.json", `{"result":{"confinement":{"mode":"confined","level":"full"}}}`)
	writeRec(t, dir, "subject-contract/invocation.json", `{"result":{"confinement":{"mode":"partial","level":"uid","degraded":["level uid: level full is not available here: x"]}}}`)
	c := report.ReadConfinement(dir)
	require.NotNil(t, c)
	assert.Equal(t, confine.LevelUID, c.Level)
	assert.Equal(t, confine.Holds(confine.LevelUID), c.Holds)
	assert.Contains(t, c.Header(), "Confinement level uid")
	assert.Contains(t, c.Header(), "its own network namespace")
	var md, gs bytes.Buffer
	d := report.Document{Confinement: c}
	require.NoError(t, render.WriteMarkdown(&md, d))
	assert.Contains(t, md.String(), "| Confinement | level uid, partial (2 commands, 0 connections refused) |")
	require.NoError(t, render.WriteGradescope(&gs, report.Scored(d)))
	assert.Contains(t, gs.String(), `"confinement_level": "uid"`)
	assert.Contains(t, gs.String(), "Confinement: level uid")
}
