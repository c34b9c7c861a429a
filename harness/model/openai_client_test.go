package model

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openaiPython finds a Python with the official openai client: the
// CAPSTONE_OPENAI_PYTHON variable, else the venv .cache/openai-py.
func openaiPython(t *testing.T) string {
	for _, p := range []string{os.Getenv("CAPSTONE_OPENAI_PYTHON"), filepath.Join("..", "..", ".cache", "openai-py", "bin", "python")} {
		if p == "" {
			continue
		}
		if err := exec.Command(p, "-c", "import openai").Run(); err == nil {
			return p
		}
	}
	t.Skip("not measured: no Python with the official openai client (set CAPSTONE_OPENAI_PYTHON or create .cache/openai-py with pip install openai==3.51.0)")
	return ""
}

// TestOfficialOpenAIPythonClient drives the server with the openai client:
// models list, a tool call, a streamed tool call with usage, a streamed
// answer, 429 with Retry-After retried by the client, 500, a stalled stream.
func TestOfficialOpenAIPythonClient(t *testing.T) {
	py := openaiPython(t)
	srv := start(t, `
name: py
turns:
  - tool_call: {name: run_command, arguments: {command: "ls /workspace"}}
  - tool_call: {name: run_command, arguments: {command: "python3 analyze.py"}}
  - answer: "Revenue grew 12% in March."
  - fault: {status: 429, retry_after: 1}
    repeat: 2
  - fault: {status: 500}
  - fault: {stall: true}
    repeat: forever
`, Config{StallMax: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "testdata/openai_client.py")
	cmd.Env = []string{"OPENAI_BASE_URL=" + srv.BaseURL(), "OPENAI_API_KEY=sk-test-key-0123456789", "PATH=/usr/bin:/bin", "HOME=" + t.TempDir()}
	cmd.Stderr = os.Stderr
	outp, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v\n%s", err, outp)
	}
	got := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(string(outp)))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			got[m["check"].(string)] = m
		}
	}
	want := func(check, key string, v any) {
		t.Helper()
		b1, _ := json.Marshal(got[check][key])
		b2, _ := json.Marshal(v)
		if string(b1) != string(b2) {
			t.Errorf("%s.%s = %s, want %s (all: %s)", check, key, b1, b2, outp)
		}
	}
	want("models", "ids", []string{DefaultModel})
	want("tool_call", "finish", "tool_calls")
	want("tool_call", "args", map[string]string{"command": "ls /workspace"})
	want("stream_tool_call", "name", "run_command")
	want("stream_tool_call", "args", map[string]string{"command": "python3 analyze.py"})
	want("stream_answer", "content", "Revenue grew 12% in March.")
	want("stream_answer", "finish", "stop")
	want("rate_limited", "error", 429)
	want("server_error", "error", 500)
	if w, _ := got["rate_limited"]["waited"].(float64); w < 0.9 {
		t.Errorf("the client retried the 429 after %.2fs, before Retry-After 1", w)
	}
	if e, _ := got["stall"]["error"].(string); e == "" {
		t.Errorf("a stalled stream did not end in an error for the client: %v", got["stall"])
	}
	if u, _ := got["stream_tool_call"]["usage"].(float64); u <= 0 {
		t.Errorf("no usage chunk: %v", got["stream_tool_call"])
	}
}
