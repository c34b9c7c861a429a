package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bash sessions (POST /session, POST /session/{id}/run, DELETE
// /session/{id}), with real execd's semantics (runtime/bash_session.go):
// each run is a fresh `bash --noprofile --norc` started with the session's
// environment in the session's directory; afterwards the exported variables
// (`export -p`) and the working directory (`pwd`) become the session's, so
// `cd` and `export` carry over to the next run (shell functions, aliases and
// unexported variables do not). Output (stdout and stderr combined) streams
// as stdout events; the exit code travels as in /command. Unlike real execd,
// which prints its bookkeeping into the output stream between markers, the
// agent reads it from a separate descriptor (fd 3, closed while the user's
// command runs), so no marker line can be confused with output.

// maxSessionEnvValue is real execd's cap on a persisted variable's value.
const maxSessionEnvValue = 8 << 10

var sessionEnvNotPersisted = map[string]bool{"PS1": true, "PS2": true, "PS3": true, "PS4": true, "PROMPT_COMMAND": true}

type bashSession struct {
	id  string
	mu  sync.Mutex
	env map[string]string
	cwd string // host path
	pid int    // running process group, 0 when idle
	ok  bool   // false once deleted
}

type sessions struct {
	mu   sync.Mutex
	byID map[string]*bashSession
}

func (s *sessions) get(id string) *bashSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

func (a *Agent) handleCreateSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Cwd string `json:"cwd"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSONOptional(r, &req); err != nil {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "error parsing request: "+err.Error())
			return
		}
	}
	cwd := a.hostPath(a.cfg.Workspace)
	if req.Cwd != "" {
		host, ok := a.resolveOr400(w, req.Cwd)
		if !ok {
			return
		}
		if err := os.MkdirAll(host, 0o755); err != nil { // as real execd
			writeError(w, fsStatus(err), fsCode(err), "error creating session: "+err.Error())
			return
		}
		cwd = host
	}
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok && validEnvKey(k) {
			env[k] = v
		}
	}
	sess := &bashSession{id: newID(), env: env, cwd: cwd, ok: true}
	a.sessions.mu.Lock()
	if a.sessions.byID == nil {
		a.sessions.byID = map[string]*bashSession{}
	}
	a.sessions.byID[sess.id] = sess
	a.sessions.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{"session_id": sess.id})
}

func (a *Agent) handleDeleteSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	a.sessions.mu.Lock()
	sess := a.sessions.byID[id]
	delete(a.sessions.byID, id)
	a.sessions.mu.Unlock()
	if sess == nil {
		writeError(w, http.StatusNotFound, "CONTEXT_NOT_FOUND", fmt.Sprintf("session %s not found", id))
		return
	}
	sess.mu.Lock()
	sess.ok = false
	if sess.pid != 0 {
		_ = syscall.Kill(-sess.pid, syscall.SIGKILL)
	}
	sess.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (a *Agent) handleRunInSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
		Timeout int64  `json:"timeout"` // ms
	}
	if err := decodeJSONOptional(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "error parsing request: "+err.Error())
		return
	}
	if strings.TrimSpace(req.Command) == "" {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "invalid request: command is required")
		return
	}
	if req.Timeout < 0 {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "invalid request: timeout must be ≥ 0 milliseconds")
		return
	}
	sess := a.sessions.get(r.PathValue("id"))
	if sess == nil {
		// Real execd: ErrContextNotFound surfaces as 500 RUNTIME_ERROR here.
		writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", fmt.Sprintf("error running in session: session %s not found", r.PathValue("id")))
		return
	}
	sess.mu.Lock()
	env := make([]string, 0, len(sess.env))
	for k, v := range sess.env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	cwd := sess.cwd
	sess.mu.Unlock()
	if req.Cwd != "" {
		host, ok := a.resolveOr400(w, req.Cwd)
		if !ok {
			return
		}
		cwd = host
	}
	if st, err := os.Stat(cwd); err != nil || !st.IsDir() {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("cwd %s does not exist or is not a directory", a.clientPath(cwd)))
		return
	}
	// The user's command runs as a brace group in the script's own shell (so
	// cd and export stick) with fd 3 closed; the bookkeeping goes to fd 3.
	script := "{\n" + req.Command + "\n} 3>&-\n" +
		"__osb_rc=$?\n" +
		"{ printf '%s\\n' \"$__osb_rc\"; pwd; export -p; } >&3\n" +
		"exit \"$__osb_rc\"\n"
	cmd := exec.Command("/bin/bash", "--noprofile", "--norc", "-c", script)
	cmd.Dir = cwd
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", err.Error())
		return
	}
	cmd.ExtraFiles = []*os.File{infoW}
	a.holdWorkspace(cmd)
	var info []byte
	infoDone := make(chan struct{})
	go func() {
		info, _ = io.ReadAll(io.LimitReader(infoR, 4<<20))
		_, _ = io.Copy(io.Discard, infoR)
		infoR.Close()
		close(infoDone)
	}()

	c := &command{id: sess.id, content: req.Command, started: time.Now().UTC(), done: make(chan struct{}), cmd: cmd}
	run := &foregroundRun{a: a, c: c, cmd: cmd}
	stdout := func(line string) {
		text := line
		if text == "" {
			text = "\n"
		}
		run.emit(event{Type: "stdout", Text: text})
	}
	c.running = true
	wg, stop, err := launch(cmd, []outputSink{lineSink(stdout, run.flushOut)}, true)
	infoW.Close()
	if err != nil {
		stream := newSSE(w)
		stream.send(event{Type: "init", Text: sess.id})
		stream.send(spawnError(err))
		return
	}
	run.wg, run.stop = wg, stop
	sess.mu.Lock()
	sess.pid = cmd.Process.Pid
	sess.mu.Unlock()
	setOOMScore(cmd.Process.Pid)
	timedOut := false
	var tmu sync.Mutex
	if req.Timeout > 0 {
		run.timer = time.AfterFunc(time.Duration(req.Timeout)*time.Millisecond, func() {
			tmu.Lock()
			timedOut = true
			tmu.Unlock()
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		})
	}
	stream := newSSE(w)
	stream.send(event{Type: "init", Text: sess.id}) // real execd: the session id
	stream.send(event{Type: "ping", Text: "pong"})
	werr := run.wait(stream)
	<-infoDone
	sess.mu.Lock()
	sess.pid = 0
	code, applied := sess.apply(info)
	sess.mu.Unlock()
	tmu.Lock()
	to := timedOut
	tmu.Unlock()
	switch {
	case to:
		stream.send(event{Type: "error", Error: &evError{Ename: "CommandExecError", Evalue: "-1",
			Traceback: []string{fmt.Sprintf("timeout after %dms", req.Timeout)}}})
	case !applied && werr != nil:
		stream.send(exitEvent(werr)) // the shell itself exited (e.g. `exit 3`) before the bookkeeping
	case applied && code != 0:
		stream.send(event{Type: "error", Error: &evError{Ename: "CommandExecError", Evalue: strconv.Itoa(code),
			Traceback: []string{fmt.Sprintf("command exited with code %d", code)}}})
	default:
		stream.send(event{Type: "execution_complete", ExecutionTime: time.Since(c.started).Milliseconds()})
	}
	if a.cfg.CloseDelay > 0 {
		time.Sleep(a.cfg.CloseDelay)
	}
}

// apply reads the bookkeeping (exit code, pwd, export -p) into the session;
// applied is false when there is none (the shell exited early).
func (s *bashSession) apply(info []byte) (code int, applied bool) {
	sc := bufio.NewScanner(bytes.NewReader(info))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	if !sc.Scan() {
		return 0, false
	}
	code, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil {
		return 0, false
	}
	if sc.Scan() && s.ok && sc.Text() != "" {
		s.cwd = sc.Text()
	}
	env := map[string]string{}
	for sc.Scan() {
		if k, v, ok := parseDeclare(sc.Text()); ok && !sessionEnvNotPersisted[k] && len(v) <= maxSessionEnvValue {
			env[k] = v
		}
	}
	if s.ok && len(env) > 0 {
		s.env = env
	}
	return code, true
}

// parseDeclare reads one `declare -x NAME="value"` line of bash's export -p.
func parseDeclare(line string) (string, string, bool) {
	rest, ok := strings.CutPrefix(line, "declare -x ")
	if !ok {
		return "", "", false
	}
	name, raw, hasValue := strings.Cut(rest, "=")
	if !validEnvKey(name) {
		return "", "", false
	}
	if !hasValue {
		return name, "", true
	}
	if v, err := strconv.Unquote(raw); err == nil {
		return name, v, true
	}
	return name, strings.Trim(raw, `"`), true
}

func validEnvKey(k string) bool {
	if k == "" {
		return false
	}
	for i, r := range k {
		if r == '_' || (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return true
}

// decodeJSONOptional decodes a JSON body; an empty body leaves v unchanged.
func decodeJSONOptional(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return json.Unmarshal(b, v)
}
