package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// commandRequest is the body of POST /command.
type commandRequest struct {
	Command    string            `json:"command"`
	Cwd        string            `json:"cwd,omitempty"`
	Background bool              `json:"background,omitempty"`
	Timeout    int64             `json:"timeout,omitempty"` // milliseconds
	UID        *uint32           `json:"uid,omitempty"`
	GID        *uint32           `json:"gid,omitempty"`
	Envs       map[string]string `json:"envs,omitempty"`
}

var pingInterval = 3 * time.Second

func (a *Agent) handleCommand(w http.ResponseWriter, r *http.Request) {
	var req commandRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 8<<20))
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "invalid request body: "+err.Error())
		return
	}
	if req.Command == "" {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "command is required")
		return
	}
	if req.GID != nil && req.UID == nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "gid requires uid")
		return
	}
	if req.Timeout < 0 {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "timeout must be a positive number of milliseconds")
		return
	}
	a.runCommand(w, req)
}

// runCommand runs a validated command request and streams it (POST
// /command, and POST /code with no language or "command", which execd runs
// the same way).
func (a *Agent) runCommand(w http.ResponseWriter, req commandRequest) {
	cwd := a.cfg.Workspace
	if req.Cwd != "" {
		cwd = req.Cwd
	}
	dir, err := a.resolve(cwd)
	if err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "invalid cwd: "+err.Error())
		return
	}
	if st, err := os.Stat(dir); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("cwd %s does not exist", cwd))
		return
	} else if !st.IsDir() {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("cwd %s is not a directory", cwd))
		return
	}
	for k := range req.Envs {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsAny(req.Envs[k], "\x00") {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("invalid environment variable %q", k))
			return
		}
	}

	c := &command{id: newID(), content: req.Command, background: req.Background, started: time.Now().UTC(), done: make(chan struct{})}
	cmd := exec.Command("/bin/bash", "-c", req.Command)
	if _, err := os.Stat("/bin/bash"); err != nil {
		cmd = exec.Command("/bin/sh", "-c", req.Command)
	}
	cmd.Dir = dir
	cmd.Env = mergeEnv(os.Environ(), req.Envs)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	a.holdWorkspace(cmd)
	if req.UID != nil {
		gid := uint32(os.Getgid())
		if req.GID != nil {
			gid = *req.GID
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: *req.UID, Gid: gid, NoSetGroups: true}
	}
	c.cmd = cmd
	a.cmds.add(c)

	if req.Background {
		err := a.startBackground(c, cmd, req.Timeout) // registered as running before init, too
		stream := newSSE(w)
		stream.send(event{Type: "init", Text: c.id})
		if err != nil {
			stream.send(spawnError(err))
			return
		}
		stream.send(event{Type: "execution_complete"})
		return
	}
	// As real execd: the command is started and registered as running before
	// init goes out, so an interrupt sent as soon as init arrives finds it.
	run, err := a.startForeground(c, cmd, req.Timeout)
	stream := newSSE(w)
	stream.send(event{Type: "init", Text: c.id})
	if err != nil {
		stream.send(spawnError(err))
		return
	}
	stream.send(event{Type: "ping", Text: "pong"}) // real execd pings right after init
	run.stream(stream)
	if a.cfg.CloseDelay > 0 {
		time.Sleep(a.cfg.CloseDelay)
	}
}

func spawnError(err error) event {
	return event{Type: "error", Error: &evError{Ename: "CommandExecError", Evalue: err.Error(), Traceback: []string{err.Error()}}}
}

// mergeEnv overlays extra on base (KEY=VALUE lists), extra winning.
func mergeEnv(base []string, extra map[string]string) []string {
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k := kv
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				k = kv[:i]
				break
			}
		}
		if _, over := extra[k]; over {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range extra {
		out = append(out, k+"="+v)
	}
	return out
}

// pumpOutput reads r into lines until EOF. Once exited is closed (the command
// has exited), everything the command wrote is already in the pipe, so the
// pump drains it: it stops at EOF (no writer left) or when the pipe has been
// empty for outputDrainIdle (a background grandchild still holds it open; what
// such a process writes after the command exited is not the command's
// output), and in any case after outputDrainCap bytes read past the exit (a
// grandchild that never stops writing). Time spent delivering lines never
// counts against these limits, so a slow client loses nothing.
func pumpOutput(r *os.File, sink outputSink, exited <-chan struct{}, wg *sync.WaitGroup) {
	defer wg.Done()
	defer r.Close()
	var draining atomic.Bool
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-exited:
			draining.Store(true)
			_ = r.SetReadDeadline(time.Now()) // wake a blocked Read; it re-arms with the idle deadline
		case <-done:
		}
	}()
	buf := make([]byte, 32<<10)
	var afterExit int64
	for {
		inDrain := draining.Load()
		if inDrain {
			_ = r.SetReadDeadline(time.Now().Add(outputDrainIdle))
		}
		start := time.Now()
		n, err := r.Read(buf)
		if n > 0 {
			sink.write(buf[:n])
			if sink.chunkDone != nil {
				sink.chunkDone()
			}
			if inDrain {
				afterExit += int64(n)
				if afterExit > outputDrainCap {
					break
				}
			}
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Woken by the exit, or the wake-up raced with our own deadline:
			// only an idle period of a full outputDrainIdle ends the drain.
			if !inDrain || time.Since(start) < outputDrainIdle {
				continue
			}
		}
		break
	}
	if sink.flush != nil {
		sink.flush()
	}
}

// outputSink receives a pipe's bytes; chunkDone (optional) runs after each
// chunk read, flush (optional) at the end.
type outputSink struct {
	write     func([]byte)
	chunkDone func()
	flush     func()
}

// lineSink splits the bytes into lines for onLine (execd's stream events);
// chunkDone, if set, runs after the lines of each chunk.
func lineSink(onLine func(string), chunkDone func()) outputSink {
	sp := &lineSplitter{emit: onLine}
	return outputSink{write: sp.write, chunkDone: chunkDone, flush: func() {
		sp.flush()
		if chunkDone != nil {
			chunkDone()
		}
	}}
}

// launch starts cmd with its output wired to the given sinks; it returns the
// pumps' WaitGroup and the channel that, closed, makes pumps drain and stop.
func launch(cmd *exec.Cmd, sinks []outputSink, combined bool) (*sync.WaitGroup, chan struct{}, error) {
	wg := &sync.WaitGroup{}
	stop := make(chan struct{})
	var readers []*os.File
	var writers []*os.File
	closeAll := func() {
		for _, f := range readers {
			f.Close()
		}
		for _, f := range writers {
			f.Close()
		}
	}
	n := 2
	if combined {
		n = 1
	}
	for i := 0; i < n; i++ {
		pr, pw, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		readers = append(readers, pr)
		writers = append(writers, pw)
	}
	cmd.Stdout = writers[0]
	cmd.Stderr = writers[len(writers)-1]
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, nil, err
	}
	for _, f := range writers {
		f.Close()
	}
	for i, r := range readers {
		wg.Add(1)
		go pumpOutput(r, sinks[i], stop, wg)
	}
	return wg, stop, nil
}

// foregroundRun is a started foreground command whose output is buffered
// until stream attaches the client's SSE stream (right after init).
type foregroundRun struct {
	a     *Agent
	c     *command
	cmd   *exec.Cmd
	wg    *sync.WaitGroup
	stop  chan struct{}
	timer *time.Timer

	mu      sync.Mutex
	sse     *sseStream
	pending []event
}

// emit queues an output event; flushOut sends what is queued (after each
// chunk read from a pipe).
func (f *foregroundRun) emit(ev event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sse == nil {
		f.pending = append(f.pending, ev)
		return
	}
	f.sse.queue(ev)
}

func (f *foregroundRun) flushOut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sse != nil {
		f.sse.flush()
	}
}

// startForeground starts cmd and marks the command running; its output waits
// (in the pipe and a small queue) until stream is called.
func (a *Agent) startForeground(c *command, cmd *exec.Cmd, timeoutMs int64) (*foregroundRun, error) {
	f := &foregroundRun{a: a, c: c, cmd: cmd}
	out := func(kind string) func(string) {
		return func(line string) {
			text := line
			if text == "" {
				text = "\n"
			}
			f.emit(event{Type: kind, Text: text})
		}
	}
	c.mu.Lock()
	c.running = true
	c.mu.Unlock()
	wg, stop, err := launch(cmd, []outputSink{lineSink(out("stdout"), f.flushOut), lineSink(out("stderr"), f.flushOut)}, false)
	if err != nil {
		a.finish(c, nil, err)
		return nil, err
	}
	f.wg, f.stop = wg, stop
	setOOMScore(cmd.Process.Pid)
	if timeoutMs > 0 {
		f.timer = time.AfterFunc(time.Duration(timeoutMs)*time.Millisecond, func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		})
	}
	return f, nil
}

// stream attaches the SSE stream, forwards output and pings, and sends the
// terminal event once the command has exited and its output is drained.
func (f *foregroundRun) stream(stream *sseStream) {
	werr := f.wait(stream)
	if werr == nil {
		stream.send(event{Type: "execution_complete", ExecutionTime: time.Since(f.c.started).Milliseconds()})
		return
	}
	stream.send(exitEvent(werr))
}

// wait attaches the SSE stream, forwards output and pings until the command
// has exited and its output is drained, and returns cmd.Wait's error.
func (f *foregroundRun) wait(stream *sseStream) error {
	f.mu.Lock()
	f.sse = stream
	for _, ev := range f.pending {
		stream.queue(ev)
	}
	f.pending = nil
	stream.flush()
	f.mu.Unlock()
	ticker := time.NewTicker(pingInterval)
	waitErr := make(chan error, 1)
	go func() { waitErr <- f.cmd.Wait() }()
	var werr error
loop:
	for {
		select {
		case werr = <-waitErr:
			break loop
		case <-ticker.C:
			stream.send(event{Type: "ping", Text: "pong"})
		}
	}
	ticker.Stop()
	if f.timer != nil {
		f.timer.Stop()
	}
	close(f.stop)
	f.wg.Wait()
	f.a.finish(f.c, werr, nil)
	return werr
}

// exitEvent is execd's terminal error event for a failed command.
func exitEvent(err error) event {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode() // -1 when killed by a signal
		return event{Type: "error", Error: &evError{Ename: "CommandExecError", Evalue: strconv.Itoa(code), Traceback: []string{ee.Error()}}}
	}
	return spawnError(err)
}

// finish records how a command ended.
func (a *Agent) finish(c *command, werr, spawnErr error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running = false
	c.finished = time.Now().UTC()
	switch {
	case spawnErr != nil:
		c.errMsg = spawnErr.Error()
	case werr == nil:
		zero := 0
		c.exitCode = &zero
	default:
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			code := ee.ExitCode()
			c.exitCode = &code
		}
		c.errMsg = werr.Error()
	}
	select {
	case <-c.done:
	default:
		close(c.done)
	}
}

func (a *Agent) startBackground(c *command, cmd *exec.Cmd, timeoutMs int64) error {
	c.mu.Lock()
	c.running = true
	c.mu.Unlock()
	wg, stop, err := launch(cmd, []outputSink{{write: c.appendOutput}}, true)
	if err != nil {
		a.finish(c, nil, err)
		return err
	}
	setOOMScore(cmd.Process.Pid)
	var timer *time.Timer
	if timeoutMs > 0 {
		timer = time.AfterFunc(time.Duration(timeoutMs)*time.Millisecond, func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		})
	}
	go func() {
		werr := cmd.Wait()
		if timer != nil {
			timer.Stop()
		}
		close(stop)
		wg.Wait()
		a.finish(c, werr, nil)
	}()
	return nil
}

// setOOMScore makes a command, not the agent, the OOM killer's choice when
// the sandbox hits its memory limit (best effort).
func setOOMScore(pid int) {
	_ = os.WriteFile("/proc/"+strconv.Itoa(pid)+"/oom_score_adj", []byte("500"), 0)
}

func (a *Agent) handleInterrupt(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		writeError(w, http.StatusBadRequest, "MISSING_QUERY", "missing query parameter: id")
		return
	}
	c := a.cmds.get(id)
	if c == nil {
		writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", fmt.Sprintf("command %s not found", id))
		return
	}
	c.mu.Lock()
	running := c.running
	cmd := c.cmd
	if running {
		c.interrupted = true
	}
	c.mu.Unlock()
	if !running || cmd == nil || cmd.Process == nil {
		writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", fmt.Sprintf("command %s is not running", id))
		return
	}
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	go func() {
		select {
		case <-c.done:
		case <-time.After(interruptGrace):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
		}
	}()
	w.WriteHeader(http.StatusOK)
}

type commandStatus struct {
	ID         string  `json:"id"`
	Content    string  `json:"content,omitempty"`
	Running    bool    `json:"running"`
	ExitCode   *int    `json:"exit_code,omitempty"`
	Error      string  `json:"error,omitempty"`
	StartedAt  string  `json:"started_at"`
	FinishedAt *string `json:"finished_at,omitempty"`
}

func (a *Agent) handleStatus(w http.ResponseWriter, r *http.Request, id string) {
	c := a.cmds.get(id)
	if c == nil {
		writeError(w, http.StatusNotFound, "INVALID_REQUEST_BODY", fmt.Sprintf("command %s not found", id))
		return
	}
	c.mu.Lock()
	st := commandStatus{ID: c.id, Content: c.content, Running: c.running, ExitCode: c.exitCode, Error: c.errMsg,
		StartedAt: c.started.Format(time.RFC3339)}
	if !c.finished.IsZero() {
		f := c.finished.Format(time.RFC3339)
		st.FinishedAt = &f
	}
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, st)
}

func (a *Agent) handleLogs(w http.ResponseWriter, r *http.Request, id string) {
	c := a.cmds.get(id)
	if c == nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("command %s not found", id))
		return
	}
	if !c.background {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", fmt.Sprintf("command %s is not running in background", id))
		return
	}
	cursor := int64(0)
	if s := r.URL.Query().Get("cursor"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "cursor must be a non-negative byte offset")
			return
		}
		cursor = n
	}
	body, next := c.logsFrom(cursor)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("EXECD-COMMANDS-TAIL-CURSOR", strconv.FormatInt(next, 10))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
