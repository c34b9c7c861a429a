package summary

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const valid = `{
  "sandbox_id": "0b6f3c1e-8d7a-4c1b-9a55-2f1d7c9e0a11",
  "exit_code": 0,
  "duration_ms": 12345,
  "stop_reason": "completed",
  "error": null,
  "metrics": {"rows": 120, "mean_price": 19.75},
  "steps": [
    {"name": "install", "command": "python3 -m pip install -q tabulate", "exit_code": 0, "duration_ms": 900,
     "stdout": "", "stderr": "", "truncated": false},
    {"name": "analyze", "command": "cd /workspace && python3 analyze.py", "exit_code": null, "duration_ms": 0,
     "stdout": "x", "stderr": "", "truncated": true}
  ]
}`

func mutate(t *testing.T, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(valid), &m))
	f(m)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return b
}

func TestValid(t *testing.T) {
	v, err := Validate([]byte(valid))
	require.NoError(t, err)
	assert.Empty(t, v)

	// failure shape: error object, sandbox_id null
	b := mutate(t, func(m map[string]any) {
		m["error"] = map[string]any{"class": "network_policy", "message": "pip could not resolve pypi.org"}
		m["sandbox_id"] = nil
		m["exit_code"] = 3
	})
	v, err = Validate(b)
	require.NoError(t, err)
	assert.Empty(t, v)
}

func TestInvalidShapes(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(m map[string]any)
		path    string
		keyword string
		msg     string
	}{
		{"missing stop_reason", func(m map[string]any) { delete(m, "stop_reason") }, "", "required", "stop_reason"},
		{"missing error key", func(m map[string]any) { delete(m, "error") }, "", "required", "error"},
		{"exit_code string", func(m map[string]any) { m["exit_code"] = "0" }, "/exit_code", "type", "want integer"},
		{"exit_code float", func(m map[string]any) { m["exit_code"] = 1.5 }, "/exit_code", "type", "want integer"},
		{"negative duration", func(m map[string]any) { m["duration_ms"] = -1 }, "/duration_ms", "minimum", "minimum"},
		{"empty stop_reason", func(m map[string]any) { m["stop_reason"] = "" }, "/stop_reason", "minLength", "minLength: got 0, want 1"},
		{"unknown error class", func(m map[string]any) {
			m["error"] = map[string]any{"class": "oops", "message": "x"}
		}, "/error/class", "enum", "network_policy"},
		{"error without message", func(m map[string]any) {
			m["error"] = map[string]any{"class": "timeout"}
		}, "/error", "required", "message"},
		{"error as string", func(m map[string]any) { m["error"] = "boom" }, "/error", "type", "want null or object"},
		{"metric not a number", func(m map[string]any) { m["metrics"] = map[string]any{"rows": "120"} }, "/metrics/rows", "type", "want number"},
		{"metrics array", func(m map[string]any) { m["metrics"] = []any{1} }, "/metrics", "type", "want object"},
		{"steps object", func(m map[string]any) { m["steps"] = map[string]any{} }, "/steps", "type", "want array"},
		{"step missing truncated", func(m map[string]any) {
			delete(m["steps"].([]any)[0].(map[string]any), "truncated")
		}, "/steps/0", "required", "truncated"},
		{"step exit_code string", func(m map[string]any) {
			m["steps"].([]any)[1].(map[string]any)["exit_code"] = "1"
		}, "/steps/1/exit_code", "type", "want null or integer"},
		{"step empty name", func(m map[string]any) {
			m["steps"].([]any)[0].(map[string]any)["name"] = ""
		}, "/steps/0/name", "minLength", "minLength: got 0, want 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Validate(mutate(t, tc.mutate))
			require.NoError(t, err)
			require.Len(t, v, 1, "%v", v)
			assert.Equal(t, tc.path, v[0].Path)
			assert.Equal(t, tc.keyword, v[0].Keyword)
			assert.Contains(t, v[0].Message, tc.msg)
			assert.Contains(t, v[0].String(), "summary.json")
		})
	}
}

func TestNotJSON(t *testing.T) {
	v, err := Validate([]byte(`{"sandbox_id": `))
	require.NoError(t, err)
	require.Len(t, v, 1)
	assert.Contains(t, v[0].Message, "not valid JSON")
}

func TestLoadAndWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "summary.json")
	require.NoError(t, os.WriteFile(p, []byte(valid), 0o644))
	s, v, err := Load(p)
	require.NoError(t, err)
	assert.Empty(t, v)
	require.NotNil(t, s)
	assert.Equal(t, 120.0, s.Metrics["rows"])
	require.Len(t, s.Steps, 2)
	assert.Nil(t, s.Steps[1].ExitCode)
	assert.Equal(t, 0, *s.Steps[0].ExitCode)

	// invalid but JSON: best-effort summary plus problems
	require.NoError(t, os.WriteFile(p, mutate(t, func(m map[string]any) { m["exit_code"] = "0" }), 0o644))
	s, v, err = Load(p)
	require.NoError(t, err)
	require.NotNil(t, s)
	assert.Equal(t, "completed", s.StopReason)
	require.Len(t, v, 1)

	_, _, err = Load(filepath.Join(dir, "missing.json"))
	assert.Error(t, err)

	// a FIFO is refused at once (never waited on), an oversized file unread
	fifo := filepath.Join(dir, "fifo.json")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	_, _, err = Load(fifo)
	assert.ErrorContains(t, err, "is not a regular file")
	big := filepath.Join(dir, "big.json")
	require.NoError(t, os.WriteFile(big, nil, 0o644))
	require.NoError(t, os.Truncate(big, MaxBytes+1))
	_, _, err = Load(big)
	assert.ErrorContains(t, err, "is larger than")

	// Write: nil maps become {} and [] and the result validates
	out := filepath.Join(dir, "w.json")
	require.NoError(t, Write(out, &Summary{SandboxID: "x", StopReason: "completed"}))
	b, _ := os.ReadFile(out)
	assert.Contains(t, string(b), `"metrics": {}`)
	assert.Contains(t, string(b), `"steps": []`)
	assert.Contains(t, string(b), `"error": null`)

	err = Write(out, &Summary{StopReason: "x", Error: &Error{Class: "nope"}})
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "/error/class"), err.Error())
	_, statErr := os.Stat(out)
	assert.NoError(t, statErr, "still written")
}

func TestSchemaFileMatchesEmbedded(t *testing.T) {
	b, err := os.ReadFile(filepath.Base(SchemaFile))
	require.NoError(t, err)
	assert.Equal(t, string(SchemaJSON), string(b))
	var m map[string]any
	require.NoError(t, json.Unmarshal(SchemaJSON, &m))
	assert.Equal(t, SchemaID, m["$id"])
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", m["$schema"])
}

// TestErrorClassesMatchSchema: error.class is a closed list written twice,
// in the schema students read (summary.schema.json) and in ErrorClasses
// (the reference pipeline and the steps use it); a class added to one only
// fails here (docs/maintaining.md, "Add a drill").
func TestErrorClassesMatchSchema(t *testing.T) {
	var schema struct {
		Properties struct {
			Error struct {
				Properties struct {
					Class struct {
						Enum []string `json:"enum"`
					} `json:"class"`
				} `json:"properties"`
			} `json:"error"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(SchemaJSON, &schema))
	assert.NotEmpty(t, schema.Properties.Error.Properties.Class.Enum, "summary.schema.json: properties.error.properties.class.enum")
	assert.ElementsMatch(t, schema.Properties.Error.Properties.Class.Enum, ErrorClasses)
}
