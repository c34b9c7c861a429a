//go:build linux

package runtime_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Byte-level framing: bare JSON objects separated by a blank line, no
// "data:" prefix, timestamp on every event.
func TestSSEFramingEcho(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, "echo hi")
	if r.Status != 200 {
		t.Fatalf("status %d: %s", r.Status, r.Raw)
	}
	for _, h := range []struct{ k, v string }{{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}} {
		if got := r.Header.Get(h.k); got != h.v {
			t.Errorf("header %s = %q, want %q", h.k, got, h.v)
		}
	}
	frame := regexp.MustCompile(`^(\{[^\n]*\}\n\n)+$`)
	if !frame.Match(r.Raw) {
		t.Fatalf("stream is not bare-JSON frames separated by blank lines: %q", r.Raw)
	}
	if strings.Contains(string(r.Raw), "data:") {
		t.Fatalf("stream has a data: prefix: %q", r.Raw)
	}
	types := []string{}
	for _, e := range r.Events {
		if e.Timestamp == nil || *e.Timestamp < time.Now().Add(-time.Hour).UnixMilli() {
			t.Errorf("event %+v lacks a millisecond timestamp", e)
		}
		types = append(types, e.Type)
	}
	// Real execd pings right after init (CONTRACT §10).
	if strings.Join(types, ",") != "init,ping,stdout,execution_complete" {
		t.Fatalf("event types %v", types)
	}
	if r.Events[0].Text == "" {
		t.Error("init carries no command id")
	}
	if r.Events[2].Text != "hi" {
		t.Errorf("stdout text %q, want %q", r.Events[2].Text, "hi")
	}
	if !regexp.MustCompile(`"type":"execution_complete"(,"execution_time":\d+)?,"timestamp":\d{13}\}`).Match(r.Raw) {
		t.Errorf("execution_complete frame malformed: %q", r.Raw)
	}
}

func TestSSELines(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, `printf 'a\n\nb\r\nc\rd'; echo oops >&2`)
	if got := strings.Join(r.stdout(), "|"); got != "a|\n|b|c|d" {
		t.Errorf("stdout lines %q, want a|\\n|b|c|d", got)
	}
	var stderr []string
	for _, e := range r.Events {
		if e.Type == "stderr" {
			stderr = append(stderr, e.Text)
		}
	}
	if strings.Join(stderr, "|") != "oops" {
		t.Errorf("stderr %q", stderr)
	}
	if !r.ok() {
		t.Errorf("last event %+v", r.last())
	}
}

func TestSSEExitCode(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, "echo before; exit 3")
	last := r.last()
	if last.Type != "error" || last.Error == nil {
		t.Fatalf("last event %+v, want error", last)
	}
	if last.Error.Ename != "CommandExecError" || last.Error.Evalue != "3" ||
		len(last.Error.Traceback) != 1 || last.Error.Traceback[0] != "exit status 3" {
		t.Errorf("error %+v", *last.Error)
	}
	if r.has("execution_complete") {
		t.Errorf("execution_complete after a failure: %q", r.Raw)
	}
	if !strings.Contains(string(r.Raw), `{"type":"error","error":{"ename":"CommandExecError","evalue":"3","traceback":["exit status 3"]}`) &&
		!regexp.MustCompile(`\{"type":"error","timestamp":\d+,"error":\{"ename":"CommandExecError","evalue":"3","traceback":\["exit status 3"\]\}\}`).Match(r.Raw) {
		t.Errorf("error frame bytes: %q", r.Raw)
	}
}

func TestSSETimeoutKillsProcessGroup(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	start := time.Now()
	r := run(t, sb, map[string]any{"command": "sleep 30 & sleep 30; echo never", "timeout": 300})
	if time.Since(start) > 20*time.Second {
		t.Fatalf("timeout did not stop the command")
	}
	last := r.last()
	if last.Type != "error" || last.Error == nil || last.Error.Evalue != "-1" ||
		len(last.Error.Traceback) != 1 || last.Error.Traceback[0] != "signal: killed" {
		t.Fatalf("last event %+v (%q)", last, r.Raw)
	}
	// The whole group died: no sleep left.
	ps := sh(t, sb, `for p in /proc/[0-9]*; do cat $p/cmdline 2>/dev/null | tr '\0' ' '; echo; done | grep -c '^sleep 30' || true`)
	if got := strings.Join(ps.stdout(), ""); got != "0" {
		t.Errorf("sleep processes left after timeout: %s", got)
	}
}

func TestCommandValidation(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	cases := []map[string]any{
		{"command": "true", "cwd": "/does/not/exist"},
		{"command": "true", "cwd": "/etc/passwd"},
		{"command": "true", "gid": 0},
		{"cwd": "/workspace"},
	}
	for _, c := range cases {
		r := run(t, sb, c)
		if r.Status != 400 || errorCode(r.Raw) != "INVALID_REQUEST_BODY" || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%v → %d %s %q", c, r.Status, r.Header.Get("Content-Type"), r.Raw)
		}
	}
	resp, body := do(t, sb, http.MethodPost, "/command", strings.NewReader("{not json"), map[string]string{"Content-Type": "application/json"})
	if resp.StatusCode != 400 || errorCode(body) != "INVALID_REQUEST_BODY" {
		t.Errorf("bad JSON → %d %s", resp.StatusCode, body)
	}
	resp, body = get(t, sb, "/ping", nil)
	if resp.StatusCode != 200 || len(body) != 0 {
		t.Errorf("/ping → %d %q", resp.StatusCode, body)
	}
	r := run(t, sb, map[string]any{"command": "echo $FOO-$PIP_BREAK_SYSTEM_PACKAGES", "envs": map[string]string{"FOO": "bar"}})
	if got := strings.Join(r.stdout(), ""); got != "bar-1" {
		t.Errorf("envs: %q", got)
	}
	r = run(t, sb, map[string]any{"command": "pwd", "cwd": "/tmp"})
	if got := strings.Join(r.stdout(), ""); got != "/tmp" {
		t.Errorf("cwd: %q", got)
	}
}

type status struct {
	ID         string  `json:"id"`
	Running    bool    `json:"running"`
	ExitCode   *int    `json:"exit_code"`
	Error      string  `json:"error"`
	StartedAt  string  `json:"started_at"`
	FinishedAt *string `json:"finished_at"`
}

func TestBackgroundCommand(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := run(t, sb, map[string]any{"command": "echo line1; echo line2 >&2; echo line3; sleep 0.3; exit 4", "background": true})
	if len(r.Events) != 2 || r.Events[0].Type != "init" || r.Events[1].Type != "execution_complete" {
		t.Fatalf("background stream %q", r.Raw)
	}
	id := r.Events[0].Text
	var st status
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, body := get(t, sb, "/command/status/"+id, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status → %d %s", resp.StatusCode, body)
		}
		_ = json.Unmarshal(body, &st)
		if !st.Running || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if st.Running || st.ExitCode == nil || *st.ExitCode != 4 || st.FinishedAt == nil || st.ID != id {
		t.Fatalf("status %+v", st)
	}
	resp, body := get(t, sb, "/command/"+id+"/logs", nil)
	if resp.StatusCode != 200 || string(body) != "line1\nline2\nline3\n" || resp.Header.Get("EXECD-COMMANDS-TAIL-CURSOR") != "18" {
		t.Errorf("logs → %d %q cursor %q", resp.StatusCode, body, resp.Header.Get("EXECD-COMMANDS-TAIL-CURSOR"))
	}
	// The cursor is a byte offset, as real execd's.
	resp, body = get(t, sb, "/command/"+id+"/logs?cursor=12", nil)
	if string(body) != "line3\n" || resp.Header.Get("EXECD-COMMANDS-TAIL-CURSOR") != "18" {
		t.Errorf("logs?cursor=2 → %q cursor %q", body, resp.Header.Get("EXECD-COMMANDS-TAIL-CURSOR"))
	}
	// Error codes of CONTRACT §2.4 / §7.13.
	if resp, body := get(t, sb, "/command/status/nope", nil); resp.StatusCode != 404 || errorCode(body) != "INVALID_REQUEST_BODY" {
		t.Errorf("unknown status → %d %s", resp.StatusCode, body)
	}
	if resp, body := get(t, sb, "/command/nope/logs", nil); resp.StatusCode != 400 {
		t.Errorf("unknown logs → %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, sb, http.MethodDelete, "/command", nil, nil); resp.StatusCode != 400 || errorCode(body) != "MISSING_QUERY" {
		t.Errorf("interrupt without id → %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, sb, http.MethodDelete, "/command?id="+id, nil, nil); resp.StatusCode != 500 || errorCode(body) != "RUNTIME_ERROR" {
		t.Errorf("interrupt finished → %d %s", resp.StatusCode, body)
	}
	if resp, body := do(t, sb, http.MethodDelete, "/command?id=nope", nil, nil); resp.StatusCode != 500 || errorCode(body) != "RUNTIME_ERROR" {
		t.Errorf("interrupt unknown → %d %s", resp.StatusCode, body)
	}
}

func TestInterruptBackground(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	r := run(t, sb, map[string]any{"command": "trap '' TERM; sleep 60", "background": true})
	id := r.Events[0].Text
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if resp, body := do(t, sb, http.MethodDelete, "/command?id="+id, nil, nil); resp.StatusCode != 200 || len(body) != 0 {
		t.Fatalf("interrupt → %d %q", resp.StatusCode, body)
	}
	var st status
	for time.Since(start) < 10*time.Second {
		_, body := get(t, sb, "/command/status/"+id, nil)
		_ = json.Unmarshal(body, &st)
		if !st.Running {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if st.Running || st.ExitCode == nil || *st.ExitCode != -1 {
		t.Fatalf("after interrupt: %+v", st)
	}
	// TERM was ignored by the shell, so SIGKILL after the 3 s grace ended it.
	if el := time.Since(start); el < 2*time.Second {
		t.Errorf("ended after %v: SIGTERM should have been ignored until the SIGKILL", el)
	}
}

func TestForegroundSurvivesClientDisconnect(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	ctx, cancel := context.WithCancel(context.Background())
	body := strings.NewReader(`{"command":"sleep 1; echo done > /workspace/marker"}`)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://execd/command", body)
	resp, err := client(sb).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	_, _ = resp.Body.Read(buf) // init arrived
	cancel()
	resp.Body.Close()
	marker := filepath.Join(sb.Dir(), "workspace", "marker")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(marker); err == nil && string(b) == "done\n" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("foreground command was killed by the client disconnect")
}

func TestProxyRoute(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	_ = sh(t, sb, "echo proxied > /workspace/index.txt")
	r := run(t, sb, map[string]any{"command": "python3 -m http.server 8123 --bind 127.0.0.1", "background": true})
	if len(r.Events) < 1 {
		t.Fatal("no init")
	}
	var body []byte
	var resp *http.Response
	for i := 0; i < 100; i++ {
		resp, body = get(t, sb, "/proxy/8123/index.txt?x=1", nil)
		if resp.StatusCode == 200 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if resp.StatusCode != 200 || string(body) != "proxied\n" {
		t.Fatalf("proxy → %d %q", resp.StatusCode, body)
	}
	resp, body = get(t, sb, "/proxy/8124/", nil)
	if resp.StatusCode != 502 || string(body) != "Bad Gateway" {
		t.Errorf("dead port → %d %q", resp.StatusCode, body)
	}
	resp, body = get(t, sb, "/metrics", nil)
	var m map[string]any
	if resp.StatusCode != 200 || json.Unmarshal(body, &m) != nil || m["cpu_count"] == nil || m["mem_used_mib"] == nil || m["timestamp"] == nil {
		t.Errorf("/metrics → %d %s", resp.StatusCode, body)
	}
}

func TestForegroundDoesNotWaitForDetachedChildren(t *testing.T) {
	sb := newSandbox(t, newRuntime(t))
	start := time.Now()
	r := sh(t, sb, "sleep 20 & echo started")
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("foreground command waited %v for a background child holding stdout", el)
	}
	if !r.ok() || strings.Join(r.stdout(), "") != "started" {
		t.Errorf("stream %q", r.Raw)
	}
}

func TestPingEveryThreeSeconds(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 3.5 s")
	}
	sb := newSandbox(t, newRuntime(t))
	r := sh(t, sb, "sleep 3.5; echo end")
	pings := 0
	for _, e := range r.Events {
		if e.Type == "ping" {
			pings++
			if e.Text != "pong" || e.Timestamp == nil {
				t.Errorf("ping event %+v", e)
			}
		}
	}
	if pings != 2 || !r.ok() { // one right after init, one at 3 s
		t.Errorf("%d pings in a 3.5 s command: %q", pings, r.Raw)
	}
}
