package standin

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/agent"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// ExecdPort is where execd listens inside a sandbox (CONTRACT §2.1).
const ExecdPort = "44772"

// execdCloseDelay is real execd's grace before it closes a finished
// command's stream (ApiGracefulShutdownTimeout, 1 s; CONTRACT §10).
const execdCloseDelay = time.Second

// ExecdMain serves the execd API on :44772 until SIGTERM/SIGINT.
func ExecdMain(args []string) int {
	addr := ":" + ExecdPort
	if len(args) > 0 {
		addr = args[0]
	}
	wd, err := os.Getwd()
	if err != nil || wd == "" {
		wd = "/"
	}
	a := agent.New(runtime.AgentConfig{ID: os.Getenv("HOSTNAME"), Root: "/", Workspace: wd, CloseDelay: execdCloseDelay}, nil)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logf("execd: %v", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	srv := &http.Server{Handler: selfProxy(a.Handler()), ReadHeaderTimeout: 30 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	logf("execd stand-in listening on %s", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logf("execd: %v", err)
		return 1
	}
	return 0
}

// selfProxy serves /proxy/44772/... (the form every bridge-mode endpoint
// takes, CONTRACT §10) by the handler itself instead of a TCP round trip
// through the proxy route back to the same port; other ports are proxied.
func selfProxy(h http.Handler) http.Handler {
	prefix := "/proxy/" + ExecdPort
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, prefix); ok && (rest == "" || strings.HasPrefix(rest, "/")) {
			if rest == "" {
				rest = "/"
			}
			r2 := r.Clone(r.Context())
			r2.URL.Path, r2.URL.RawPath, r2.RequestURI = rest, "", ""
			h.ServeHTTP(w, r2)
			return
		}
		h.ServeHTTP(w, r)
	})
}
