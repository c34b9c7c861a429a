package agent

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"
)

// Code contexts (execd's /code routes, CONTRACT §2.3–2.4). Real execd runs
// them in Jupyter kernels, which only a code interpreter's image carries
// (opensandbox/code-interpreter); in any other image they answer "language
// runtime server not configured". Here a code interpreter's image gets a
// Python kernel of the agent's own (kernel.py): a python3 process per context
// that keeps the context's namespace between runs, streams what the cell
// prints, and shows the value of a last expression as a result, as Jupyter
// does. Python is the only language; a context of another answers execd's
// "no kernel specs found" at once, where real execd would retry for minutes.
// A run with no language (or "command") is a plain command, in every image.

//go:embed kernel.py
var kernelSource string

// errNoKernelServer is real execd's answer where no Jupyter server runs.
var errNoKernelServer = errors.New("language runtime server not configured, please check your image runtime")

// errContextNotFound is runtime.ErrContextNotFound's text.
var errContextNotFound = errors.New("context not found")

// kernelLanguages are the languages execd runs in Jupyter kernels.
var kernelLanguages = map[string]bool{"python": true, "bash": true, "java": true, "javascript": true, "typescript": true, "go": true}

// codeKernel is one code context's kernel process.
type codeKernel struct {
	id, language, cwd string
	busy              sync.Mutex // held by the run in progress (TryLock: "session is busy")
	cmd               *exec.Cmd
	requests          io.WriteCloser // the kernel's stdin
	events            *bufio.Reader  // the kernel's fd 3
	dead              chan struct{}  // closed when the process has exited
}

// codeContexts are the agent's kernels, by context id, and each language's
// default context (the one a run with a language and no id uses).
type codeContexts struct {
	mu       sync.Mutex
	byID     map[string]*codeKernel
	defaults map[string]string
}

// maxKernelEvent bounds one event line from a kernel (a result's repr, a
// chunk of output): the kernel is the sandbox's own code, never trusted.
const maxKernelEvent = 16 << 20

func (a *Agent) startKernel(language, cwd string) (*codeKernel, error) {
	dir := a.cfg.Workspace
	if cwd != "" {
		dir = cwd
	}
	host, err := a.resolve(dir)
	if err != nil {
		return nil, err
	}
	if cwd != "" {
		if err := os.MkdirAll(host, 0o755); err != nil {
			return nil, err
		}
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("python3", "-u", "-c", kernelSource)
	cmd.Dir = host
	cmd.Env = os.Environ()
	cmd.ExtraFiles = []*os.File{ctlW} // fd 3
	a.holdWorkspace(cmd)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// What child processes write to the kernel's own descriptors is the
	// container's log, as a Jupyter kernel's terminal output is.
	logs := a.logPipes(cmd, "kernel")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		_ = ctlR.Close()
		_ = ctlW.Close()
		return nil, err
	}
	err = cmd.Start()
	_ = ctlW.Close()
	for _, w := range logs {
		_ = w.Close()
	}
	if err != nil {
		_ = ctlR.Close()
		return nil, err
	}
	setOOMScore(cmd.Process.Pid)
	k := &codeKernel{id: newID(), language: language, cwd: cwd, cmd: cmd, requests: stdin,
		events: bufio.NewReaderSize(ctlR, 64<<10), dead: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = ctlR.Close()
		close(k.dead)
	}()
	return k, nil
}

// stop kills the kernel's process group.
func (k *codeKernel) stop() {
	if k.cmd.Process != nil {
		_ = syscall.Kill(-k.cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = k.requests.Close()
}

// interrupt raises KeyboardInterrupt in the cell running (SIGINT, as
// Jupyter interrupts a kernel); an idle kernel ignores it.
func (k *codeKernel) interrupt() {
	if k.cmd.Process != nil {
		_ = k.cmd.Process.Signal(syscall.SIGINT)
	}
}

func (c *codeContexts) get(id string) *codeKernel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byID[id]
}

func (c *codeContexts) add(k *codeKernel, asDefault bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID, c.defaults = map[string]*codeKernel{}, map[string]string{}
	}
	c.byID[k.id] = k
	if asDefault {
		c.defaults[k.language] = k.id
	}
}

// remove forgets the context and stops its kernel.
func (c *codeContexts) remove(id string) bool {
	c.mu.Lock()
	k := c.byID[id]
	delete(c.byID, id)
	for lang, d := range c.defaults {
		if d == id {
			delete(c.defaults, lang)
		}
	}
	c.mu.Unlock()
	if k != nil {
		k.stop()
	}
	return k != nil
}

// list is the contexts of language ("" every one), oldest id first.
func (c *codeContexts) list(language string) []map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []map[string]string{}
	for id, k := range c.byID {
		if language == "" || k.language == language {
			out = append(out, map[string]string{"id": id, "language": k.language})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["id"] < out[j]["id"] })
	return out
}

// defaultKernel is language's default context, started on first use.
func (a *Agent) defaultKernel(language string) (*codeKernel, error) {
	a.code.mu.Lock()
	id := a.code.defaults[language]
	a.code.mu.Unlock()
	if k := a.code.get(id); k != nil {
		return k, nil
	}
	k, err := a.startKernel(language, "")
	if err != nil {
		return nil, err
	}
	a.code.add(k, true)
	return k, nil
}

// kernelFor checks that a kernel of language can run here: errNoKernelServer
// outside a code interpreter's image, "no kernel specs found" for a language
// other than Python.
func (a *Agent) kernelFor(language string) error {
	if !a.cfg.CodeContexts {
		return errNoKernelServer
	}
	if language != "python" {
		return errors.New("no kernel specs found")
	}
	return nil
}

type codeContextRequest struct {
	Language string `json:"language,omitempty"`
	Cwd      string `json:"cwd,omitempty"`
}

// handleCreateContext is POST /code/context.
func (a *Agent) handleCreateContext(w http.ResponseWriter, r *http.Request) {
	var req codeContextRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "error parsing request, MAYBE invalid body format. "+err.Error())
		return
	}
	fail := func(err error) {
		writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", "error creating code context. "+err.Error())
	}
	if err := a.kernelFor(req.Language); err != nil {
		fail(err)
		return
	}
	k, err := a.startKernel(req.Language, req.Cwd)
	if err != nil {
		fail(err)
		return
	}
	a.code.add(k, false)
	resp := map[string]string{"id": k.id, "language": req.Language}
	if req.Cwd != "" {
		resp["cwd"] = req.Cwd
	}
	writeJSON(w, http.StatusOK, resp)
}

// handleListContexts is GET /code/contexts[?language=].
func (a *Agent) handleListContexts(w http.ResponseWriter, r *http.Request) {
	lang := r.URL.Query().Get("language")
	switch lang {
	case "command", "background-command", "sql":
		writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", "unsupported language context operation: "+lang)
		return
	}
	writeJSON(w, http.StatusOK, a.code.list(lang))
}

// handleContext is GET and DELETE /code/contexts/{id}.
func (a *Agent) handleContext(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	k := a.code.get(id)
	if k == nil || (r.Method == http.MethodDelete && !a.code.remove(id)) {
		writeError(w, http.StatusNotFound, "CONTEXT_NOT_FOUND", fmt.Sprintf("context %s not found", id))
		return
	}
	if r.Method == http.MethodDelete {
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"id": k.id, "language": k.language})
}

// handleDeleteContexts is DELETE /code/contexts?language=.
func (a *Agent) handleDeleteContexts(w http.ResponseWriter, r *http.Request) {
	lang := r.URL.Query().Get("language")
	if lang == "" {
		writeError(w, http.StatusBadRequest, "MISSING_QUERY", "missing query parameter 'language'")
		return
	}
	for _, c := range a.code.list(lang) {
		a.code.remove(c["id"])
	}
	w.WriteHeader(http.StatusOK)
}

// handleInterruptCode is DELETE /code?id=: a context's running cell, else a
// command (execd interrupts either through one route).
func (a *Agent) handleInterruptCode(w http.ResponseWriter, r *http.Request) {
	if k := a.code.get(r.URL.Query().Get("id")); k != nil {
		k.interrupt()
		w.WriteHeader(http.StatusOK)
		return
	}
	a.handleInterrupt(w, r)
}

type runCodeRequest struct {
	Context struct {
		ID       string `json:"id,omitempty"`
		Language string `json:"language,omitempty"`
	} `json:"context"`
	Code string `json:"code"`
}

// handleRunCode is POST /code.
func (a *Agent) handleRunCode(w http.ResponseWriter, r *http.Request) {
	var req runCodeRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 8<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "error parsing request, MAYBE invalid body format. "+err.Error())
		return
	}
	if req.Code == "" {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY",
			"invalid request, validation error Key: 'RunCodeRequest.Code' Error:Field validation for 'Code' failed on the 'required' tag")
		return
	}
	fail := func(err error) {
		writeError(w, http.StatusInternalServerError, "RUNTIME_ERROR", "error running codes "+err.Error())
	}
	lang := req.Context.Language
	switch {
	case lang == "" || lang == "command":
		a.runCommand(w, commandRequest{Command: req.Code})
		return
	case lang == "background-command":
		a.runCommand(w, commandRequest{Command: req.Code, Background: true})
		return
	case lang == "sql":
		fail(errors.New("sql is not supported by this sandbox agent"))
		return
	case !kernelLanguages[lang]:
		fail(fmt.Errorf("unknown language: %s", lang))
		return
	}
	var k *codeKernel
	if req.Context.ID == "" {
		if err := a.kernelFor(lang); err != nil {
			fail(err)
			return
		}
		var err error
		if k, err = a.defaultKernel(lang); err != nil {
			fail(err)
			return
		}
	} else if k = a.code.get(req.Context.ID); k == nil {
		if !a.cfg.CodeContexts {
			fail(errNoKernelServer)
		} else {
			fail(errContextNotFound)
		}
		return
	}
	stream := newSSE(w)
	stream.send(event{Type: "init", Text: k.id})
	stopPing := make(chan struct{})
	var pinging sync.WaitGroup
	pinging.Add(1)
	go func() {
		defer pinging.Done()
		t := time.NewTicker(pingInterval)
		defer t.Stop()
		for {
			select {
			case <-stopPing:
				return
			case <-t.C:
				stream.send(event{Type: "ping", Text: "pong"})
			}
		}
	}()
	defer func() { close(stopPing); pinging.Wait() }()
	if !k.busy.TryLock() {
		// As execd: init is out, so the error follows as its JSON body.
		stream.raw(`{"code":"RUNTIME_ERROR","message":"error running codes session is busy"}`)
		return
	}
	defer k.busy.Unlock()
	a.runCell(r, k, req.Code, stream)
}

// kernelEvent is one line of a kernel's fd 3.
type kernelEvent struct {
	T         string         `json:"t"`
	Name      string         `json:"name"`
	Text      string         `json:"text"`
	Data      map[string]any `json:"data"`
	Count     int            `json:"count"`
	Ename     string         `json:"ename"`
	Evalue    string         `json:"evalue"`
	Traceback []string       `json:"traceback"`
}

// runCell sends code to the kernel and streams its events as execd streams a
// Jupyter kernel's: stdout and stderr as they come, execution_count then
// result for a last expression's value, status "error" then error for an
// exception, and execution_complete once the kernel is idle again. A client
// that goes away interrupts the cell, as execd interrupts the kernel.
func (a *Agent) runCell(r *http.Request, k *codeKernel, code string, stream *sseStream) {
	start := time.Now()
	line, _ := json.Marshal(map[string]string{"code": code})
	if _, err := k.requests.Write(append(line, '\n')); err != nil {
		a.kernelDied(k, stream, err)
		return
	}
	evs := make(chan kernelEvent)
	readErr := make(chan error, 1)
	go func() {
		defer close(evs)
		for {
			b, err := readKernelLine(k.events)
			if err != nil {
				readErr <- err
				return
			}
			var ev kernelEvent
			if json.Unmarshal(b, &ev) != nil {
				continue
			}
			evs <- ev
			if ev.T == "done" {
				return
			}
		}
	}()
	gone := r.Context().Done()
	for {
		select {
		case <-gone:
			k.interrupt()
			stream.send(event{Type: "error", Error: &evError{Ename: "ContextCancelled", Evalue: "Interrupt kernel", Traceback: []string{}}})
			gone = nil // keep reading to the cell's end, so the kernel is ready for the next
		case ev, ok := <-evs:
			if !ok {
				a.kernelDied(k, stream, <-readErr)
				return
			}
			switch ev.T {
			case "stream":
				if ev.Text != "" && (ev.Name == "stdout" || ev.Name == "stderr") {
					stream.send(event{Type: ev.Name, Text: ev.Text})
				}
			case "result":
				stream.send(event{Type: "execution_count", ExecutionCount: ev.Count})
				if len(ev.Data) > 0 {
					res := map[string]any{}
					for mime, v := range ev.Data {
						if mime == "text/plain" {
							mime = "text"
						}
						res[mime] = v
					}
					stream.send(event{Type: "result", Results: res})
				}
			case "error":
				tb := ev.Traceback
				if tb == nil {
					tb = []string{}
				}
				stream.send(event{Type: "status", Text: "error"})
				stream.send(event{Type: "error", Error: &evError{Ename: ev.Ename, Evalue: ev.Evalue, Traceback: tb}})
			case "done":
				ms := max(time.Since(start).Milliseconds(), 1)
				stream.send(event{Type: "execution_complete", ExecutionTime: ms})
				return
			}
		}
	}
}

// kernelDied ends a run whose kernel went away, and forgets the context.
func (a *Agent) kernelDied(k *codeKernel, stream *sseStream, err error) {
	a.code.remove(k.id)
	msg := "the kernel process exited"
	if err != nil && !errors.Is(err, io.EOF) {
		msg += ": " + err.Error()
	}
	stream.send(event{Type: "error", Error: &evError{Ename: "DeadKernelError", Evalue: msg, Traceback: []string{}}})
}

// readKernelLine reads one event line, refusing one over maxKernelEvent.
func readKernelLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxKernelEvent {
			return nil, fmt.Errorf("a kernel event over %d bytes", maxKernelEvent)
		}
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

// closeKernels stops every kernel (the agent is going away).
func (a *Agent) closeKernels() {
	for _, c := range a.code.list("") {
		a.code.remove(c["id"])
	}
}

// kernelPort is where a code interpreter's image serves its interpreter
// runtime (Jupyter; the SDK probes ${JUPYTER_PORT:-44771} before it calls
// the interpreter ready).
const kernelPort = "44771"

// serveKernelPort listens where a code interpreter's runtime listens, so a
// client's readiness probe finds it. It is not a Jupyter server: it answers
// GET /api with a version and 404 to anything else; the kernels are the
// agent's own, reached through execd's /code routes.
func (a *Agent) serveKernelPort(ctx context.Context) {
	port := os.Getenv("JUPYTER_PORT")
	if port == "" {
		port = kernelPort
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		log.Printf("code interpreter port %s: %v", port, err)
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"version": "osb-agent kernels (not a Jupyter server)"})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	_ = srv.Serve(ln)
}

// routeCode mounts the /code routes on mux.
func (a *Agent) routeCode(mux *http.ServeMux) {
	mux.HandleFunc("POST /code", a.handleRunCode)
	mux.HandleFunc("DELETE /code", a.handleInterruptCode)
	mux.HandleFunc("POST /code/context", a.handleCreateContext)
	mux.HandleFunc("GET /code/contexts", a.handleListContexts)
	mux.HandleFunc("DELETE /code/contexts", a.handleDeleteContexts)
	mux.HandleFunc("GET /code/contexts/{id}", a.handleContext)
	mux.HandleFunc("DELETE /code/contexts/{id}", a.handleContext)
}
