package mockserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// RuntimeOptions is what ServeMain hands to NewRuntime.
type RuntimeOptions struct {
	StateDir                 string
	AllowInsecureNoIsolation bool
	// DiskLimitBytes caps what one sandbox can write (0: the runtime's default
	// of 1 GiB; negative: no limit).
	DiskLimitBytes int64
}

// EgressOptions is what ServeMain hands to NewEgress.
type EgressOptions struct {
	StateDir    string
	Upstreams   map[string]string // lower-case host (or *.suffix) → http://127.0.0.1:port
	Audit       audit.Recorder
	DenyWebhook string // URL for the deny-webhook payload; empty: none
	PassThrough bool   // dial allowed hosts without a mapping (real use only)
}

// Wiring hooks for ServeMain (set by wire.go to runtime.NewLinux /
// egress.NewHub; tests may replace them). NewEgress may be nil: the server
// then runs without egress (networkPolicy → 400). ProfileFor nil →
// runtime.ProfileFor.
var (
	NewRuntime func(RuntimeOptions) (runtime.Runtime, error)
	NewEgress  func(EgressOptions) (EgressHub, io.Closer, error)
	ProfileFor func(image string) (runtime.Profile, error)
)

type upstreamFlag map[string]string

func (u upstreamFlag) String() string { return fmt.Sprint(map[string]string(u)) }

func (u upstreamFlag) Set(v string) error {
	host, target, ok := strings.Cut(v, "=")
	host = strings.ToLower(strings.TrimSpace(host))
	if !ok || host == "" || !strings.HasPrefix(target, "http://") && !strings.HasPrefix(target, "https://") {
		return fmt.Errorf("want host=http://127.0.0.1:port, got %q", v)
	}
	u[host] = strings.TrimSpace(target)
	return nil
}

// ServeMain implements `acceptance serve-mock`. It prints exactly one line,
// the base URL, once the server accepts requests, and runs until SIGINT or
// SIGTERM, then kills and removes every sandbox. Returns the exit code.
func ServeMain(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal gets the default behaviour (kills a stuck shutdown)
	}()
	return serveMain(ctx, args, stdout, stderr)
}

// serveMain is ServeMain until ctx is done.
func serveMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve-mock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "lifecycle API address (loopback unless you say otherwise)")
	apiKey := fs.String("api-key", "", "OPEN-SANDBOX-API-KEY value (required)")
	adminToken := fs.String("admin-token", "", "X-Mock-Admin-Token for the /_mock admin API (empty: admin API disabled)")
	stateDir := fs.String("state-dir", "", "state directory (sandboxes, audit.jsonl); default a temporary directory removed on exit")
	maxTimeout := fs.Duration("max-timeout", 24*time.Hour, "largest accepted sandbox timeout")
	insecure := fs.Bool("insecure-no-isolation", false, "run sandboxes as plain processes when namespaces are unavailable")
	upstreams := upstreamFlag{}
	fs.Var(upstreams, "upstream", "host=http://127.0.0.1:port mapping for the egress gateway (repeatable)")
	denyWebhook := fs.String("deny-webhook", "", "URL that receives each egress denial as OpenSandbox's deny-webhook payload {hostname,timestamp,source,sandboxId}")
	passThrough := fs.Bool("egress-pass-through", false, "let the gateway dial allowed hosts that have no --upstream mapping (real use only: sandboxes then reach the real internet; never used by the tests)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "serve-mock: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if *apiKey == "" {
		fmt.Fprintln(stderr, "serve-mock: --api-key is required")
		return 2
	}
	if host, _, err := net.SplitHostPort(*listen); err != nil {
		fmt.Fprintf(stderr, "serve-mock: --listen %q: %v\n", *listen, err)
		return 2
	} else if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		fmt.Fprintf(stderr, "serve-mock: warning: listening on non-loopback address %s\n", *listen)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b, err := StartBundled(context.Background(), BundledConfig{Listen: *listen, APIKey: *apiKey, AdminToken: *adminToken,
		StateDir: *stateDir, MaxTimeout: *maxTimeout, Upstreams: upstreams, InsecureNoIsolation: *insecure, Logger: logger,
		DenyWebhook: *denyWebhook, EgressPassThrough: *passThrough})
	if err != nil {
		fmt.Fprintf(stderr, "serve-mock: %v\n", err)
		return 1
	}
	srv := b.Server
	fmt.Fprintln(stdout, srv.URL())
	<-ctx.Done()
	logger.Info("shutting down: removing every sandbox")
	if err := b.Close(); err != nil {
		logger.Warn("shutdown", "err", err)
		return 1
	}
	return 0
}
