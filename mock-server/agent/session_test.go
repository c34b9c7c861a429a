package agent

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func runSession(t *testing.T, base, sid string, body map[string]any) streamResult {
	t.Helper()
	b, _ := json.Marshal(body)
	res, err := http.Post(base+"/session/"+sid+"/run", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		res.Body.Close()
		t.Fatalf("run in session: %d", res.StatusCode)
	}
	return readStream(t, res)
}

// TestBashSession: /session keeps the working directory
// and exported variables across runs (as real execd's bash sessions), streams
// combined output as stdout events, reports the exit code as /command does,
// and DELETE ends it (404 CONTEXT_NOT_FOUND afterwards).
func TestBashSession(t *testing.T) {
	_, srv, _ := testAgent(t)
	st, body := do(t, "POST", srv.URL+"/session", "application/json", `{}`)
	var created struct {
		SessionID string `json:"session_id"`
	}
	if st != http.StatusOK || json.Unmarshal([]byte(body), &created) != nil || created.SessionID == "" {
		t.Fatalf("create session: %d %s", st, body)
	}
	sid := created.SessionID
	r := runSession(t, srv.URL, sid, map[string]any{"command": "cd /tmp && export FOO=bar && echo hi && echo warn >&2"})
	if strings.Join(r.stdout, "|") != "hi|warn" || r.terminal != "execution_complete" || r.types[0] != "init" {
		t.Fatalf("first run: %+v", r)
	}
	r = runSession(t, srv.URL, sid, map[string]any{"command": "pwd; echo $FOO"})
	if strings.Join(r.stdout, "|") != "/tmp|bar" {
		t.Fatalf("state not kept: %+v", r)
	}
	r = runSession(t, srv.URL, sid, map[string]any{"command": "false"})
	if r.terminal != "error" || r.evalue != "1" {
		t.Fatalf("failing run: %+v", r)
	}
	r = runSession(t, srv.URL, sid, map[string]any{"command": "sleep 5", "timeout": 200})
	if r.terminal != "error" || r.evalue != "-1" {
		t.Fatalf("timed-out run: %+v", r)
	}
	if st, body := do(t, "POST", srv.URL+"/session/"+sid+"/run", "application/json", `{}`); st != http.StatusBadRequest {
		t.Errorf("run without command: %d %s", st, body)
	}
	if st, body := do(t, "DELETE", srv.URL+"/session/"+sid, "", ""); st != http.StatusOK {
		t.Fatalf("delete: %d %s", st, body)
	}
	if st, body := do(t, "DELETE", srv.URL+"/session/"+sid, "", ""); st != http.StatusNotFound || !strings.Contains(body, "CONTEXT_NOT_FOUND") {
		t.Errorf("delete again: %d %s", st, body)
	}
	if st, _ := do(t, "POST", srv.URL+"/session/"+sid+"/run", "application/json", `{"command":"true"}`); st < 400 {
		t.Errorf("run in a deleted session: %d", st)
	}
}
