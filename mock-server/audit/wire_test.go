package audit

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/require"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/events.golden.jsonl")

// everyKind is one event of every kind with every field set (the lifecycle one
// twice: with and without a body), in the order of the golden file.
func everyKind() []wire.Event {
	t0 := time.Date(2026, 11, 30, 15, 42, 54, 750198246, time.UTC)
	exit := 1
	return []wire.Event{
		{Seq: 1, Time: t0, SandboxID: "sb-1", Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: "POST", Path: "/v1/sandboxes",
			Status: 202, RequestID: "70b7db0a174e4836be02ef615b00291c", KeyFingerprint: "44e6d051b8fe",
			Body: json.RawMessage(`{"env":{"TOKEN":"sha256:9f86d081884c"},"image":{"uri":"python:3.12"},"timeout":1200}`)}},
		{Seq: 2, Time: t0, SandboxID: "sb-1", Kind: wire.KindLifecycle, Lifecycle: &wire.Lifecycle{Method: "GET",
			Path: "/v1/sandboxes/sb-1/endpoints/44772", Status: 200, RequestID: "d62eb3d1a8f040fead05bba78c338b5a"}},
		{Seq: 3, Time: t0, SandboxID: "sb-1", Kind: wire.KindCommand, Command: &wire.Command{ID: "97b4c0ff", Command: "python3 -c 'print(1)' 2>/dev/null",
			Cwd: "/workspace", TimeoutMs: 300000, Background: true, StartedAt: t0.Add(-time.Second), ExitCode: &exit,
			DurationMs: 14884, StdoutBytes: 3, StderrBytes: 450, Error: "timeout"}},
		{Seq: 4, Time: t0, SandboxID: "sb-1", Kind: wire.KindCommand, Command: &wire.Command{ID: "running", Command: "sleep 9", StartedAt: t0}},
		{Seq: 5, Time: t0, SandboxID: "sb-1", Kind: wire.KindFile, File: &wire.File{Op: "mv", Path: "/workspace/a", Dest: "/workspace/b",
			Size: 14413, SHA256: "cd5c0b430b1ae8be2c29797ae47707f57de85635aaf51bfdd899f7f59a98de6d", Status: 200}},
		{Seq: 6, Time: t0, SandboxID: "sb-1", Kind: wire.KindState, State: &wire.State{From: "Running", To: "Deleted", Reason: "deleted by API"}},
		{Seq: 7, Time: t0, SandboxID: "sb-1", Kind: wire.KindEgress, Egress: &wire.Egress{Phase: "connect", Host: "pypi.org", Port: 443,
			Decision: "deny", Rule: "override:pypi.org", Upstream: "127.0.0.1:9", Reason: "qtype=AAAA"}},
		{Seq: 8, Time: t0, SandboxID: "sb-1", Kind: wire.KindVault, Vault: &wire.Vault{Op: "inject", Revision: 2, Binding: "data-api", Host: "data-api.capstone.test"}},
		{Seq: 9, Time: t0, Kind: wire.KindFault, Fault: &wire.Fault{Name: "egress-deny-override", Active: true, Detail: "deny pypi.org"}},
		{Seq: 10, Time: t0, SandboxID: "sb-1", Kind: wire.KindCanary, Canary: &wire.Canary{Label: "data-token", Location: "env", Where: "DATA_TOKEN"}},
		{Seq: 11, Time: t0, SandboxID: "sb-1", Kind: wire.KindExecdAfterRemoval, ExecdAfterRemoval: &wire.AfterRemoval{Method: "GET",
			Path: "/files/download", Note: "connection reset"}},
	}
}

// TestWireFormatGolden pins the JSON form of every event kind, byte for byte:
// the audit.jsonl lines and the /_mock/audit entries graders and old bundles read.
func TestWireFormatGolden(t *testing.T) {
	var buf bytes.Buffer
	for _, ev := range everyKind() {
		b, err := json.Marshal(ev)
		require.NoError(t, err)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	path := filepath.Join("testdata", "events.golden.jsonl")
	if *updateGolden {
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), buf.String())
}

// The store writes audit.jsonl in exactly that form.
func TestStoreWritesGoldenForm(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	s, err := NewStore(path, nil)
	require.NoError(t, err)
	for _, ev := range everyKind() {
		ev.Seq = 0 // the store numbers events itself
		s.Record(ev)
	}
	require.NoError(t, s.Close())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join("testdata", "events.golden.jsonl"))
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}
