package mockserver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// RuntimeOptions is what StartBundled hands to Wiring.NewRuntime.
type RuntimeOptions struct {
	StateDir                 string
	AllowInsecureNoIsolation bool
	// DiskLimitBytes caps what one sandbox can write (0: the runtime's default
	// of 1 GiB; negative: no limit).
	DiskLimitBytes int64
}

// EgressOptions is what StartBundled hands to Wiring.NewEgress.
type EgressOptions struct {
	StateDir    string
	Upstreams   map[string]string // lower-case host (or *.suffix) → http://127.0.0.1:port
	Audit       audit.Recorder
	DenyWebhook string // URL for the deny-webhook payload; empty: none
	PassThrough bool   // dial allowed hosts without a mapping (real use only)
	// Watched returns the values the gateway looks for in each request it
	// forwards (the server's canaries and input markers).
	Watched func() map[string]string
}

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

type hostPathsFlag []string

func (h *hostPathsFlag) String() string { return strings.Join(*h, ",") }

func (h *hostPathsFlag) Set(v string) error {
	if !filepath.IsAbs(v) || filepath.Clean(v) != v || v == "/" {
		return fmt.Errorf("want an absolute, clean directory other than /, got %q", v)
	}
	*h = append(*h, v)
	return nil
}

// ServeMain implements `acceptance serve-mock`. It prints exactly one line,
// the base URL, once the server accepts requests, and runs until SIGINT or
// SIGTERM, then kills and removes every sandbox. Returns the exit code.
func ServeMain(args []string, stdout, stderr io.Writer) int {
	return serveWith(args, stdout, stderr, Wiring{})
}

// serveWith is ServeMain with the wiring w (Wiring{}: production).
func serveWith(args []string, stdout, stderr io.Writer, w Wiring) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal gets the default behaviour (kills a stuck shutdown)
	}()
	return serveMain(ctx, args, stdout, stderr, w)
}

// serveMain is ServeMain with the wiring w (Wiring{}: production) until ctx
// is done.
func serveMain(ctx context.Context, args []string, stdout, stderr io.Writer, w Wiring) int {
	fs := flag.NewFlagSet("serve-mock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:8080", "lifecycle API address (loopback unless you say otherwise)")
	apiKey := fs.String("api-key", "", "OPEN-SANDBOX-API-KEY value (required: this, --api-key-file or $"+EnvServeAPIKey+"; argv shows in ps, prefer the file or the variable)")
	apiKeyFile := fs.String("api-key-file", "", "file holding the OPEN-SANDBOX-API-KEY value (first line)")
	adminToken := fs.String("admin-token", "", "X-Mock-Admin-Token for the /_mock admin API (empty: admin API disabled; argv shows in ps, prefer --admin-token-file or $"+EnvServeAdminToken+")")
	adminTokenFile := fs.String("admin-token-file", "", "file holding the X-Mock-Admin-Token (first line)")
	stateDir := fs.String("state-dir", "", "state directory (sandboxes, audit.jsonl), kept on exit; default a fresh instance directory under --state-root, removed on exit")
	stateRootF := fs.String("state-root", "", "where instance directories live; every start reaps those of dead servers (default "+DefaultStateRoot+", else a per-user directory under the system temp dir)")
	diskLimit := fs.String("disk-limit", "1Gi", "what one sandbox can write, all its writable directories together (quantity, e.g. 512Mi, 2Gi; \"none\" = no limit)")
	maxTimeout := fs.Duration("max-timeout", 24*time.Hour, "largest accepted sandbox timeout (> 0)")
	noAuth := fs.Bool("no-auth", false, "check no API key at all, as upstream's CI runs the real server (no api_key): every lifecycle call is accepted, no key can be added, so there are no tenants; never for grading (acceptance grade refuses such a target)")
	insecure := fs.Bool("insecure-no-isolation", false, "run sandboxes as plain processes when namespaces are unavailable")
	execdToken := fs.String("execd-access-token", "auto", "give each sandbox's execd an access token of its own (X-EXECD-ACCESS-TOKEN, in its endpoint responses' headers only): auto = where sandboxes have no network namespace (--insecure-no-isolation on a host without namespaces), on, off (as 1.1.1)")
	volumeRoot := fs.String("volume-root", "", "directory holding named volumes (pvc volumes: <dir>/<claimName>, the real Docker runtime's Docker named volumes; kept across runs); default <state root>/volumes")
	defaultLimits := fs.String("default-limits", "cpu=1,memory=1Gi,pids=256", "limits of a sandbox whose create's resourceLimits leaves cpu, memory or pids out (or unparseable); a field \"none\": no such limit")
	tenantQuota := fs.String("tenant-quota", "sandboxes=64,cpu=2,memory=6Gi,pids=2048", "per tenant (the keys of one graded submission): live sandboxes (a create over it answers 400), and the cpu, memory and pids its sandboxes use together (one cgroup parent); a field \"none\": unbounded")
	volumeQuota := fs.String("tenant-volume-quota", "256Mi", "per tenant: the disk its named volumes may hold together (a tmpfs mounted nosuid,nodev, removed with the tenant); \"none\": a plain directory, no quota")
	privateVolumes := fs.Bool("private-volumes", false, "keep named volumes under this instance's state directory (removed with it) instead of --volume-root")
	var allowHost hostPathsFlag
	fs.Var(&allowHost, "allow-host-path", "host directory that host-path volumes may use (repeatable; the real server's storage.allowed_host_paths; default none)")
	renewIntent := fs.Bool("renew-intent", false, "renew a sandbox's expiry on traffic through the server proxy when it was created with extensions[\"access.renew.extend.seconds\"] (the real server's [renew_intent] enabled; default off, as there)")
	renewMin := fs.Duration("renew-min-interval", 60*time.Second, "with --renew-intent: least time between two renewals of one sandbox (renew_intent.min_interval_seconds; >= 1s)")
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
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "serve-mock: "+format+"\n", a...)
		return 2
	}
	key, err := serveSecret(*apiKey, *apiKeyFile, EnvServeAPIKey, "--api-key")
	if err != nil {
		return bad("%v", err)
	}
	switch {
	case *noAuth && key != "":
		return bad("--no-auth with an API key (--api-key, --api-key-file or $%s): choose one", EnvServeAPIKey)
	case !*noAuth && key == "":
		return bad("--api-key is required (or --api-key-file, or $%s), unless --no-auth", EnvServeAPIKey)
	}
	*apiKey = key
	admin, err := serveSecret(*adminToken, *adminTokenFile, EnvServeAdminToken, "--admin-token")
	if err != nil {
		return bad("%v", err)
	}
	*adminToken = admin
	host, port, err := net.SplitHostPort(*listen)
	if err != nil {
		return bad("--listen %q: %v (want IP:PORT, e.g. 127.0.0.1:8080)", *listen, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return bad("--listen %q: port %q is not a number in 0..65535", *listen, port)
	}
	ip := net.ParseIP(host)
	if host != "localhost" && ip == nil {
		return bad("--listen %q: host must be an IP address or localhost (no name lookups)", *listen)
	}
	if host != "localhost" && !ip.IsLoopback() {
		fmt.Fprintf(stderr, "serve-mock: warning: listening on non-loopback address %s\n", *listen)
	}
	if *noAuth {
		fmt.Fprintf(stderr, "serve-mock: warning: --no-auth: every lifecycle call is accepted without an API key (as the real server with no api_key); not for grading\n")
	}
	if *maxTimeout <= 0 {
		return bad("--max-timeout %s: must be positive (e.g. 24h)", *maxTimeout)
	}
	if *renewMin < time.Second {
		return bad("--renew-min-interval %s: must be at least 1s", *renewMin)
	}
	var diskBytes int64 = -1
	if v := strings.TrimSpace(*diskLimit); v != "none" {
		if diskBytes, err = runtime.ParseBytes(v); err != nil || diskBytes <= 0 {
			return bad("--disk-limit %q: want a positive quantity such as 512Mi or 1Gi, or none", *diskLimit)
		}
	}
	if *denyWebhook != "" {
		if u, err := url.Parse(*denyWebhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("--deny-webhook %q: want an http:// or https:// URL", *denyWebhook)
		}
	}
	defLimits, err := parseLimitsFlag(*defaultLimits)
	if err != nil {
		return bad("--default-limits %q: %v", *defaultLimits, err)
	}
	quota, err := parseQuotaFlag(*tenantQuota)
	if err != nil {
		return bad("--tenant-quota %q: %v", *tenantQuota, err)
	}
	var volQuota int64 = -1
	if v := strings.TrimSpace(*volumeQuota); v != "none" {
		if volQuota, err = runtime.ParseBytes(v); err != nil || volQuota <= 0 {
			return bad("--tenant-volume-quota %q: want a positive quantity such as 256Mi, or none", *volumeQuota)
		}
	}
	tokenMode, ok := ParseExecdTokenMode(*execdToken)
	if !ok {
		return bad("--execd-access-token %q: want auto, on or off", *execdToken)
	}
	if *privateVolumes && *volumeRoot != "" {
		return bad("--private-volumes and --volume-root both given: use one")
	}
	if *volumeRoot != "" && (!filepath.IsAbs(*volumeRoot) || filepath.Clean(*volumeRoot) == "/") {
		return bad("--volume-root %q: want an absolute directory other than /", *volumeRoot)
	}
	for _, d := range []struct{ flag, path string }{{"--state-dir", *stateDir}, {"--state-root", *stateRootF}, {"--volume-root", *volumeRoot}} {
		if info, err := os.Stat(d.path); d.path != "" && err == nil && !info.IsDir() {
			return bad("%s %q: not a directory", d.flag, d.path)
		}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b, err := StartBundled(context.Background(), BundledConfig{Listen: *listen, APIKey: *apiKey, NoAuth: *noAuth, AdminToken: *adminToken,
		StateDir: *stateDir, StateRoot: *stateRootF, AllowedHostPaths: allowHost, DiskLimitBytes: diskBytes, MaxTimeout: *maxTimeout, Upstreams: upstreams, InsecureNoIsolation: *insecure, Logger: logger,
		DenyWebhook: *denyWebhook, EgressPassThrough: *passThrough,
		VolumeRoot: *volumeRoot, PrivateVolumes: *privateVolumes,
		DefaultLimits: defLimits, TenantQuota: quota, VolumeQuotaBytes: volQuota,
		RenewIntent: RenewIntentConfig{Enabled: *renewIntent, MinInterval: *renewMin}, ExecdAccessToken: tokenMode, Wiring: w})
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

// The environment variables serve-mock reads its secrets from when neither the
// flag nor the -file flag is given. They are removed from the server's own
// environment once read, so nothing it starts inherits them.
const (
	EnvServeAPIKey     = "ACCEPTANCE_MOCK_API_KEY"
	EnvServeAdminToken = "ACCEPTANCE_MOCK_ADMIN_TOKEN"
)

// serveSecretMax bounds a secret file: a key is a line, never a file's worth.
const serveSecretMax = 4096

// serveSecret picks a secret from exactly one of: the flag's value (visible
// in ps, kept for compatibility), a file (its first line), or the environment
// variable env. Giving both the flag and the file is an error; a file that is
// empty, too large or unreadable is an error naming it.
func serveSecret(value, file, env, flagName string) (string, error) {
	if value != "" && file != "" {
		return "", fmt.Errorf("%s and %s-file both given: use one", flagName, flagName)
	}
	fromEnv, inEnv := os.LookupEnv(env)
	if inEnv {
		_ = os.Unsetenv(env)
	}
	switch {
	case value != "":
		return value, nil
	case file != "":
		f, err := os.Open(file)
		if err != nil {
			return "", fmt.Errorf("%s-file: %v", flagName, err)
		}
		defer f.Close()
		if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
			return "", fmt.Errorf("%s-file %q: not a regular file", flagName, file)
		}
		b, err := io.ReadAll(io.LimitReader(f, serveSecretMax+1))
		if err != nil {
			return "", fmt.Errorf("%s-file %q: %v", flagName, file, err)
		}
		if len(b) > serveSecretMax {
			return "", fmt.Errorf("%s-file %q: larger than %d bytes (want the secret on one line)", flagName, file, serveSecretMax)
		}
		line := strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])
		if line == "" {
			return "", fmt.Errorf("%s-file %q: empty (want the secret on its first line)", flagName, file)
		}
		return line, nil
	default:
		return strings.TrimSpace(fromEnv), nil
	}
}
