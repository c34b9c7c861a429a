// Package agent is the in-sandbox half of a sandbox: the same binary as the
// server, started by the runtime with os.Args[1]==runtime.AgentArg. It serves
// the execd HTTP API (CONTRACT §2) on the listener inherited as fd 3, runs the
// sandbox's entrypoint as its main process and reports the entrypoint's exit
// on fd 5, and starts the egress sidecar when a gateway socket is mounted.
//
// When the entrypoint exits, execd keeps serving (unlike a Docker container,
// whose execd dies with it): the lifecycle layer reports Terminated/Failed from
// the runtime's State, and a harness can still read files and logs.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// MainIfAgent returns immediately unless this process was started as a
// sandbox agent; then it runs the agent and exits. Call it first in main()
// and in TestMain of every package that starts sandboxes.
func MainIfAgent() {
	if len(os.Args) < 2 || os.Args[1] != runtime.AgentArg {
		return
	}
	os.Exit(Run())
}

// Run runs the agent with the inherited file descriptors; it returns the
// process exit code.
func Run() int {
	// Stdout and stderr are the sandbox's container log (agent.log): every
	// line stamped as `docker logs --timestamps` shows it, and bounded.
	clog := newContainerLog(os.Stdout, ContainerLogLimit)
	log.SetOutput(clog.Stream())
	log.SetFlags(0)
	log.SetPrefix("osb-agent: ")
	if err := hardenSelf(); err != nil {
		log.Printf("make the agent non-dumpable: %v", err)
		return 2
	}
	// Never let commands inherit the control descriptors.
	for _, fd := range []int{runtime.AgentFDListener, runtime.AgentFDConfig, runtime.AgentFDEvents} {
		syscall.CloseOnExec(fd)
	}
	cfgFile := os.NewFile(runtime.AgentFDConfig, "osb-config")
	raw, err := io.ReadAll(cfgFile)
	_ = cfgFile.Close()
	if err != nil {
		log.Printf("read config: %v", err)
		return 2
	}
	var cfg runtime.AgentConfig
	if err := json.Unmarshal(raw, &cfg); err != nil {
		log.Printf("parse config: %v", err)
		return 2
	}
	if cfg.Env != nil {
		os.Clearenv()
		for k, v := range cfg.Env {
			_ = os.Setenv(k, v)
		}
	}
	lnFile := os.NewFile(runtime.AgentFDListener, "osb-execd")
	ln, err := net.FileListener(lnFile)
	_ = lnFile.Close()
	if err != nil {
		log.Printf("execd listener: %v", err)
		return 2
	}
	events := os.NewFile(runtime.AgentFDEvents, "osb-events")
	a := New(cfg, events)
	a.clog = clog

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := a.serve(ctx, ln); err != nil {
		log.Printf("execd: %v", err)
		return 1
	}
	return 0
}

// serve starts the egress sidecar (when a gateway socket is mounted) and the
// entrypoint, then serves execd on ln until ctx ends. The sidecar is started
// first and synchronously: execd answers its first /ping (the runtime's
// readiness probe) only once the sidecar listens.
func (a *Agent) serve(ctx context.Context, ln net.Listener) error {
	if sock := a.cfg.GatewaySocket; sock != "" {
		if _, err := os.Stat(sock); err == nil {
			if err := a.startSidecar(ctx, sock); err != nil {
				log.Printf("egress sidecar: %v", err)
			}
		} else {
			log.Printf("egress sidecar not started: %v", err)
		}
	}
	go a.runEntrypoint()
	if a.cfg.CodeContexts {
		go a.serveKernelPort(ctx)
	}

	srv := &http.Server{Handler: a.Handler(), ReadHeaderTimeout: 30 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	defer a.closeKernels()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Agent is the execd implementation; exported so tests can mount it on any
// listener.
type Agent struct {
	cfg      runtime.AgentConfig
	events   io.Writer
	evMu     sync.Mutex
	cmds     *registry
	sessions sessions
	// startSidecar starts the egress sidecar (the package's startSidecar;
	// a test sets its own after New).
	startSidecar func(ctx context.Context, gatewaySocket string) error
	// clog is the container log the entrypoint's output goes to (nil: the
	// agent's own stdout and stderr, unstamped).
	clog *containerLog
	// code holds the code contexts' kernels (code.go).
	code codeContexts
	// wsState: the workspace descriptor (workspacefd.go).
	wsState
}

// New builds an agent. events receives one runtime.AgentEvent JSON per line
// (nil: discarded).
func New(cfg runtime.AgentConfig, events io.Writer) *Agent {
	if cfg.Root == "" {
		cfg.Root = "/"
	}
	if cfg.Workspace == "" {
		cfg.Workspace = "/workspace"
	}
	return &Agent{cfg: cfg, events: events, cmds: newRegistry(), startSidecar: startSidecar}
}

func (a *Agent) report(ev runtime.AgentEvent) {
	if a.events == nil {
		return
	}
	b, _ := json.Marshal(ev)
	a.evMu.Lock()
	defer a.evMu.Unlock()
	_, _ = a.events.Write(append(b, '\n'))
}

// logPipes points cmd's stdout and stderr at pipes the agent copies into
// the container log (when there is one) and returns their write ends, which
// the caller closes once cmd has started. what names cmd in a failure.
func (a *Agent) logPipes(cmd *exec.Cmd, what string) []*os.File {
	if a.clog == nil {
		return nil
	}
	var ends []*os.File
	for i := range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			log.Printf("%s output pipe: %v", what, err)
			break
		}
		if i == 0 {
			cmd.Stdout = w
		} else {
			cmd.Stderr = w
		}
		ends = append(ends, w)
		st := a.clog.Stream()
		go func() {
			_, _ = io.Copy(st, r)
			_ = st.Close()
			_ = r.Close()
		}()
	}
	return ends
}

// runEntrypoint starts the sandbox's main process (exec form, like Docker)
// and reports how it ended.
func (a *Agent) runEntrypoint() {
	ep := a.cfg.Entrypoint
	if len(ep) == 0 {
		return
	}
	cmd := exec.Command(ep[0], ep[1:]...)
	cmd.Dir = a.hostPath(a.cfg.Workspace)
	cmd.Env = os.Environ()
	cmd.Stdout = os.Stdout
	cmd.Stderr = os.Stderr
	a.holdWorkspace(cmd)
	// Pipes the agent reads into the container log, not the log file
	// itself: an entrypoint writes lines that get stamped and bounded.
	// *os.File ends, so Wait returns when the entrypoint exits even if a
	// child of its keeps the pipe open.
	pipes := a.logPipes(cmd, "entrypoint")
	err := cmd.Start()
	for _, w := range pipes {
		_ = w.Close()
	}
	if err != nil {
		a.report(runtime.AgentEvent{Kind: "entrypoint_exit", ExitCode: 127, Error: err.Error(), Time: time.Now().UTC()})
		return
	}
	err = cmd.Wait()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
		} else {
			code = 1
		}
	}
	log.Printf("entrypoint exited: code %d (%v)", code, err)
	a.report(runtime.AgentEvent{Kind: "entrypoint_exit", ExitCode: code, Time: time.Now().UTC()})
}

// Handler is the execd HTTP API.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ping", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("POST /command", a.handleCommand)
	mux.HandleFunc("DELETE /command", a.handleInterrupt)
	// One pattern: Go's mux rejects /command/status/{id} next to /command/{id}/logs.
	mux.HandleFunc("GET /command/{a}/{b}", func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.PathValue("a") == "status":
			a.handleStatus(w, r, r.PathValue("b"))
		case r.PathValue("b") == "logs":
			a.handleLogs(w, r, r.PathValue("a"))
		default:
			ginNotFound(w)
		}
	})
	mux.HandleFunc("GET /metrics", a.handleMetrics)
	mux.HandleFunc("GET /metrics/watch", a.handleMetricsWatch)
	mux.HandleFunc("POST /files/upload", a.handleUpload)
	mux.HandleFunc("GET /files/download", a.handleDownload)
	mux.HandleFunc("GET /files/info", a.handleInfo)
	mux.HandleFunc("GET /files/search", a.handleSearch)
	mux.HandleFunc("DELETE /files", a.handleDeleteFiles)
	mux.HandleFunc("POST /files/mv", a.handleMove)
	mux.HandleFunc("POST /files/permissions", a.handlePermissions)
	mux.HandleFunc("POST /files/replace", a.handleReplace)
	mux.HandleFunc("GET /directories/list", a.handleListDir)
	mux.HandleFunc("POST /directories", a.handleMkdir)
	mux.HandleFunc("DELETE /directories", a.handleRmdir)
	mux.Handle("/proxy/{port}/", http.HandlerFunc(a.handleProxy))
	mux.Handle("/proxy/{port}", http.HandlerFunc(a.handleProxy))
	mux.HandleFunc("POST /session", a.handleCreateSession)
	mux.HandleFunc("POST /session/{id}/run", a.handleRunInSession)
	mux.HandleFunc("DELETE /session/{id}", a.handleDeleteSession)
	a.routeCode(mux)
	for _, p := range []string{"/pty", "/pty/"} {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotImplemented, "NOT_SUPPORTED",
				fmt.Sprintf("%s is not supported by this sandbox agent (pty is not implemented)", r.URL.Path))
		})
	}
	// An unknown route, or a method its path's routes do not take, is gin's
	// 404 as real execd answers it (HandleMethodNotAllowed off: no 405).
	noRoute := func(w http.ResponseWriter, r *http.Request) { ginNotFound(w) }
	mux.HandleFunc("/", noRoute)
	routed := ginRouting(mux, noRoute)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Real execd (gin, no HEAD routes, HandleMethodNotAllowed off) answers
		// HEAD anywhere but its /proxy/ reverse proxy with gin's own 404
		// ("404 page not found", text/plain); Go's mux would let HEAD reach a
		// GET route.
		if r.Method == http.MethodHead && !strings.HasPrefix(r.URL.Path, "/proxy/") {
			ginNotFound(w)
			return
		}
		routed.ServeHTTP(w, r)
	})
}

// ginNotFound is gin's own answer for a request no route takes (real execd's
// router: components/execd/pkg/web/router.go): 404 "404 page not found",
// text/plain, not an execd JSON error.
func ginNotFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte("404 page not found"))
}
