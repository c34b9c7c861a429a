package osb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		out = append(out, append([]byte(nil), sc.Bytes()...))
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, out)
	return out
}

func decodeStrict(t *testing.T, line []byte) wire.Event {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var ev wire.Event
	require.NoError(t, dec.Decode(&ev), "%s", line)
	return ev
}

// The server's audit events (every kind, every field; pinned byte for byte by
// mock-server/audit's TestWireFormatGolden) decode on the harness side with no
// field unknown and encode back to the same bytes.
func TestAuditEventWireRoundTrip(t *testing.T) {
	kinds := map[string]bool{}
	for _, line := range readLines(t, filepath.Join("..", "..", "mock-server", "audit", "testdata", "events.golden.jsonl")) {
		ev := decodeStrict(t, line)
		kinds[string(ev.Kind)] = true
		back, err := json.Marshal(ev)
		require.NoError(t, err)
		assert.Equal(t, string(line), string(back))
	}
	assert.Len(t, kinds, 9, "one event of every kind: %v", kinds)
}

// Lines of a real audit.jsonl decode, and a lifecycle body written by an older
// server as a Go []byte (base64) reads as the same JSON as today's raw form.
func TestAuditJSONLSampleDecodes(t *testing.T) {
	var bodies []json.RawMessage
	kinds := map[string]bool{}
	for _, line := range readLines(t, filepath.Join("testdata", "audit-sample.jsonl")) {
		ev := decodeStrict(t, line)
		kinds[string(ev.Kind)] = true
		switch ev.Kind {
		case "lifecycle":
			require.NotNil(t, ev.Lifecycle)
			if len(ev.Lifecycle.Body) > 0 {
				bodies = append(bodies, ev.Lifecycle.Body)
			}
		case "command":
			require.NotNil(t, ev.Command)
			require.NotNil(t, ev.Command.ExitCode)
		case "canary":
			require.NotNil(t, ev.Canary)
		}
	}
	assert.Len(t, kinds, 8, "%v", kinds)
	require.Len(t, bodies, 2)
	assert.True(t, json.Valid(bodies[1]), "%s", bodies[1])
	assert.JSONEq(t, string(bodies[0]), string(bodies[1]))
	assert.Contains(t, string(bodies[1]), `"python:3.12"`)
}
