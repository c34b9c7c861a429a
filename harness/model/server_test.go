package model

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func start(t *testing.T, script string, cfg Config) *Server {
	t.Helper()
	s, err := ParseScript([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Script = s
	if cfg.APIKey == "" {
		cfg.APIKey = "sk-test-key-0123456789"
	}
	srv, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func post(t *testing.T, srv *Server, key string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", srv.BaseURL()+"/chat/completions", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

var userMsg = []map[string]any{{"role": "user", "content": "analyse"}}

const toolScript = `
name: t
seed: 9
turns:
  - tool_call: {name: run_command, arguments: {command: "ls /workspace"}}
  - answer: "done here"
`

func TestCompletionNonStreamingToolCallThenAnswer(t *testing.T) {
	srv := start(t, toolScript, Config{})
	res := post(t, srv, "sk-test-key-0123456789", map[string]any{"model": "x", "messages": userMsg,
		"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "run_command", "parameters": map[string]any{"type": "object"}}}}})
	defer res.Body.Close()
	var c completion
	if err := json.NewDecoder(res.Body).Decode(&c); err != nil || res.StatusCode != 200 {
		t.Fatalf("status %d, %v", res.StatusCode, err)
	}
	if c.Object != "chat.completion" || len(c.Choices) != 1 || c.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("bad completion %+v", c)
	}
	tc := c.Choices[0].Message.ToolCalls
	if len(tc) != 1 || tc[0].Type != "function" || tc[0].Function.Name != "run_command" || !strings.HasPrefix(tc[0].ID, "call_") {
		t.Fatalf("tool calls %+v", tc)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(tc[0].Function.Arguments), &args); err != nil || args["command"] != "ls /workspace" {
		t.Fatalf("arguments %q", tc[0].Function.Arguments)
	}
	if c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens || c.Usage.PromptTokens == 0 {
		t.Fatalf("usage %+v", c.Usage)
	}
	msgs := append(userMsg, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": tc[0].ID, "type": "function",
		"function": map[string]any{"name": "run_command", "arguments": tc[0].Function.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": tc[0].ID, "content": "exit 0: input.csv"})
	res2 := post(t, srv, "sk-test-key-0123456789", map[string]any{"model": "x", "messages": msgs})
	defer res2.Body.Close()
	var c2 completion
	_ = json.NewDecoder(res2.Body).Decode(&c2)
	if c2.Choices[0].FinishReason != "stop" || *c2.Choices[0].Message.Content != "done here" {
		t.Fatalf("second turn %+v", c2)
	}
	xs := srv.Exchanges()
	if len(xs) != 2 || xs[1].ToolResults[0] != "exit 0: input.csv" || xs[0].Turn != 1 || xs[1].Turn != 2 || !xs[0].AuthOK {
		t.Fatalf("exchanges %+v", xs)
	}
	if xs[0].ToolsOffered[0] != "run_command" {
		t.Fatalf("tools offered %v", xs[0].ToolsOffered)
	}
	// After the last turn the script's final answer is given.
	res3 := post(t, srv, "sk-test-key-0123456789", map[string]any{"model": "x", "messages": userMsg})
	var c3 completion
	_ = json.NewDecoder(res3.Body).Decode(&c3)
	res3.Body.Close()
	if *c3.Choices[0].Message.Content != DefaultFinally {
		t.Fatalf("exhausted script answered %+v", c3)
	}
}

func TestDeterministicAcrossServers(t *testing.T) {
	var bodies [2]string
	for i := range bodies {
		srv := start(t, toolScript, Config{})
		res := post(t, srv, "sk-test-key-0123456789", map[string]any{"messages": userMsg})
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		bodies[i] = string(b)
	}
	if bodies[0] != bodies[1] {
		t.Fatalf("same script and seed answered differently:\n%s\n%s", bodies[0], bodies[1])
	}
}

func TestStreamingToolCall(t *testing.T) {
	srv := start(t, toolScript, Config{})
	res := post(t, srv, "sk-test-key-0123456789", map[string]any{"messages": userMsg, "stream": true, "stream_options": map[string]any{"include_usage": true}})
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	var args strings.Builder
	var finish string
	sawUsage, done := false, false
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("not an SSE data line: %q", line)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil || c.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %q: %v", data, err)
		}
		if c.Usage != nil {
			sawUsage = len(c.Choices) == 0
			continue
		}
		for _, tc := range c.Choices[0].Delta.ToolCalls {
			args.WriteString(tc.Function.Arguments)
		}
		if c.Choices[0].FinishReason != nil {
			finish = *c.Choices[0].FinishReason
		}
	}
	if !done || !sawUsage || finish != "tool_calls" || args.String() != `{"command":"ls /workspace"}` {
		t.Fatalf("done %v usage %v finish %q args %q", done, sawUsage, finish, args.String())
	}
}

func TestFaultsAndLimits(t *testing.T) {
	srv := start(t, `
name: f
max_requests: 3
turns:
  - fault: {status: 429, retry_after: 2}
  - fault: {status: 500}
  - answer: ok
`, Config{})
	res := post(t, srv, "sk-test-key-0123456789", map[string]any{"messages": userMsg})
	var e apiError
	_ = json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	if res.StatusCode != 429 || res.Header.Get("Retry-After") != "2" || e.Error.Type != "rate_limit_error" {
		t.Fatalf("429 turn: %d %q %+v", res.StatusCode, res.Header.Get("Retry-After"), e)
	}
	res = post(t, srv, "sk-test-key-0123456789", map[string]any{"messages": userMsg})
	res.Body.Close()
	if res.StatusCode != 500 {
		t.Fatalf("500 turn: %d", res.StatusCode)
	}
	res = post(t, srv, "sk-test-key-0123456789", map[string]any{"messages": userMsg})
	res.Body.Close()
	res = post(t, srv, "sk-test-key-0123456789", map[string]any{"messages": userMsg})
	_ = json.NewDecoder(res.Body).Decode(&e)
	res.Body.Close()
	if res.StatusCode != 400 || e.Error.Code == nil || *e.Error.Code != "turn_limit" {
		t.Fatalf("past max_requests: %d %+v", res.StatusCode, e)
	}
	if xs := srv.Exchanges(); !xs[3].CutOff {
		t.Fatalf("cut off not recorded: %+v", xs[3])
	}
}

func TestStallEndsWhenTheClientGivesUp(t *testing.T) {
	srv := start(t, "name: s\nturns:\n  - fault: {stall: true}\n    repeat: forever\n", Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	b, _ := json.Marshal(map[string]any{"messages": userMsg, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.BaseURL()+"/chat/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer sk-test-key-0123456789")
	res, err := http.DefaultClient.Do(req)
	if err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err == nil {
		t.Fatal("a stalled stream ended normally")
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if xs := srv.Exchanges(); len(xs) == 1 {
			if !xs[0].ClientGone {
				t.Fatalf("stall not recorded as abandoned: %+v", xs[0])
			}
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the stalled exchange was never recorded")
}

func TestSecretsFoundAndRedacted(t *testing.T) {
	env := []string{"OPEN_SANDBOX_DOMAIN=127.0.0.1:4321", "OPEN_SANDBOX_API_KEY=osb-key-abcdef123456", "CAPSTONE_RUN_ID=run-77",
		"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "CAPSTONE_DATA_API_TOKEN=capstone-data-feedface0011"}
	srv := start(t, toolScript, Config{
		Secrets: []Secret{{Label: "data_api_token", Value: "capstone-data-feedface0011"}, {Label: "platform_api_key", Value: "osb-key-abcdef123456"}},
		Env:     env,
	})
	leak := map[string]any{"messages": []map[string]any{
		{"role": "system", "content": "be helpful"},
		{"role": "user", "content": "env: " + strings.Join(env, "\n")},
	}}
	res := post(t, srv, "sk-test-key-0123456789", leak)
	res.Body.Close()
	x := srv.Exchanges()[0]
	if len(x.Findings) != 2 || x.Findings[0].Where != "message 2 (user)" {
		t.Fatalf("findings %+v", x.Findings)
	}
	if len(x.EnvDump) < EnvDumpThreshold {
		t.Fatalf("env dump not recognised: %v", x.EnvDump)
	}
	if strings.Contains(string(x.Request), "feedface0011") || strings.Contains(string(x.Request), "abcdef123456") ||
		!strings.Contains(string(x.Request), "[REDACTED:data_api_token]") {
		t.Fatalf("evidence not redacted: %s", x.Request)
	}
	var buf bytes.Buffer
	_ = WriteJSONL(&buf, srv.Exchanges())
	if strings.Contains(buf.String(), "feedface0011") {
		t.Fatal("JSONL evidence holds a secret")
	}
	if d := Dialogue("t", srv.Exchanges()); !strings.Contains(d, "secret in the request") || strings.Contains(d, "feedface0011") {
		t.Fatalf("dialogue:\n%s", d)
	}
	// An escaped secret inside a JSON string argument is still found.
	srv2 := start(t, toolScript, Config{Secrets: []Secret{{Label: "k", Value: `key"with/quote123`}}})
	res = post(t, srv2, "sk-test-key-0123456789", map[string]any{"messages": []map[string]any{{"role": "user", "content": `x key"with/quote123 y`}}})
	res.Body.Close()
	x = srv2.Exchanges()[0]
	if len(x.Findings) != 1 || strings.Contains(string(x.Request), "with/quote123") {
		t.Fatalf("escaped secret: %+v %s", x.Findings, x.Request)
	}
}

func TestBadRequests(t *testing.T) {
	srv := start(t, toolScript, Config{})
	for _, c := range []struct {
		name, key, body string
		want            int
	}{
		{"wrong key", "nope", `{"messages":[{"role":"user","content":"x"}]}`, 401},
		{"not JSON", "sk-test-key-0123456789", `{`, 400},
		{"no messages", "sk-test-key-0123456789", `{"messages":[]}`, 400},
	} {
		req, _ := http.NewRequest("POST", srv.BaseURL()+"/chat/completions", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+c.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e apiError
		derr := json.NewDecoder(res.Body).Decode(&e)
		res.Body.Close()
		if res.StatusCode != c.want || derr != nil || e.Error.Message == "" {
			t.Errorf("%s: %d (want %d), %v", c.name, res.StatusCode, c.want, derr)
		}
	}
	res, _ := http.Get(srv.BaseURL() + "/chat/completions")
	res.Body.Close()
	if res.StatusCode != 405 {
		t.Errorf("GET completions: %d", res.StatusCode)
	}
	if srv.Requests() != 0 {
		t.Errorf("refused requests consumed %d script turns", srv.Requests())
	}
}

func TestModelsList(t *testing.T) {
	srv := start(t, toolScript, Config{})
	req, _ := http.NewRequest("GET", srv.BaseURL()+"/models", nil)
	req.Header.Set("Authorization", "Bearer sk-test-key-0123456789")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var l modelList
	_ = json.NewDecoder(res.Body).Decode(&l)
	res.Body.Close()
	if l.Object != "list" || len(l.Data) != 1 || l.Data[0].ID != DefaultModel || l.Data[0].Object != "model" {
		t.Fatalf("models: %+v", l)
	}
}

func TestScriptValidation(t *testing.T) {
	for name, src := range map[string]string{
		"no turns":         "name: x\n",
		"two kinds":        "name: x\nturns:\n  - answer: a\n    fault: {status: 500}\n",
		"bad status":       "name: x\nturns:\n  - fault: {status: 200}\n",
		"unknown field":    "name: x\nturns:\n  - answr: a\n",
		"bad repeat":       "name: x\nturns:\n  - answer: a\n    repeat: often\n",
		"forever not last": "name: x\nturns:\n  - answer: a\n    repeat: forever\n  - answer: b\n",
		"nameless tool":    "name: x\nturns:\n  - tool_call: {arguments: {a: 1}}\n",
	} {
		if _, err := ParseScript([]byte(src)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	s, err := ParseScript([]byte("name: x\nturns:\n  - answer: a\n    repeat: 2\n  - answer: b\n    repeat: forever\n"))
	if err != nil {
		t.Fatal(err)
	}
	for n, want := range map[int]int{1: 0, 2: 0, 3: 1, 100: 1} {
		if _, i, ok := s.TurnFor(n); !ok || i != want {
			t.Errorf("request %d → turn %d (ok %v), want %d", n, i, ok, want)
		}
	}
	for _, name := range Names() {
		if _, err := Lookup(name); err != nil {
			t.Errorf("bundled script %s: %v", name, err)
		}
	}
}

func TestListensOnLoopbackOnly(t *testing.T) {
	s, _ := ParseScript([]byte(toolScript))
	if _, err := Start(Config{Script: s, Addr: "0.0.0.0:0"}); err == nil {
		t.Fatal("listened on a non-loopback address")
	}
}
