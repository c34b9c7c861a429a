package mockserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// BundledConfig configures StartBundled: the complete bundled server (Linux
// runtime + egress hub + lifecycle server) as serve-mock runs it.
type BundledConfig struct {
	Listen string // default 127.0.0.1:0
	APIKey string // required, unless NoAuth
	// NoAuth: authentication off for good (Config.NoAuth), as upstream's CI
	// runs the real server; never for grading.
	NoAuth     bool
	AdminToken string // empty: admin API disabled
	// StateDir is an explicit state directory (kept after Close; a restart
	// with the same dir reaps what a killed server left). Empty: a fresh
	// instance directory under StateRoot, removed by Close.
	StateDir string
	// StateRoot holds the instance directories of servers started without a
	// StateDir (default DefaultStateRoot, else a per-user directory under the
	// system temp dir). Every start reaps the instances whose server died.
	StateRoot string
	// DiskLimitBytes caps what one sandbox can write (0: 1 GiB; negative: none).
	DiskLimitBytes int64
	// AllowedHostPaths are the host directories host-path volumes may use (empty: none).
	AllowedHostPaths    []string
	MaxTimeout          time.Duration // 0: 24h
	Upstreams           map[string]string
	InsecureNoIsolation bool
	Logger              *slog.Logger
	// DenyWebhook receives every egress denial (CONTRACT §3.4 payload); empty: none.
	DenyWebhook string
	// EgressPassThrough lets the gateway dial allowed hosts that have no
	// Upstreams mapping. Off by default: an unmapped allowed host fails closed.
	EgressPassThrough bool
	// ExecdGracePeriod: how long a removed sandbox's execd port records and
	// resets late calls (0: 10 minutes, negative: off; see execd_linger.go).
	ExecdGracePeriod time.Duration
	// VolumeRoot holds named volumes (pvc): <VolumeRoot>/<claimName>, kept
	// across runs like Docker's volumes. Empty: <state root>/volumes.
	VolumeRoot string
	// RenewIntent: renew-on-access through the server proxy (off by default,
	// as the real server's [renew_intent]).
	RenewIntent RenewIntentConfig
	// PrivateVolumes puts named volumes under this server's own state
	// directory (<state dir>/volumes) instead of VolumeRoot: nothing is
	// shared with another server, and they end with it. The grader sets it.
	PrivateVolumes bool
	// DefaultLimits, TenantQuota and VolumeQuotaBytes: see Config (zero
	// fields: the documented defaults; negative: none).
	DefaultLimits    runtime.Limits
	TenantQuota      Quota
	VolumeQuotaBytes int64
	// ExecdAccessToken: when each sandbox's execd gets an access token of
	// its own (Config.ExecdAccessToken). The zero value (ExecdTokenAuto):
	// where the runtime gives the sandboxes no network namespace.
	ExecdAccessToken ExecdTokenMode
	// Wiring builds the runtime and the egress hub and resolves images (the
	// zero Wiring: the production ones; tests pass fakes).
	Wiring Wiring
}

// Bundled is a running bundled server.
type Bundled struct {
	Server  *Server
	Runtime runtime.Runtime
	Reaped  []string // what was reaped: dead instances' leftovers, a previous run's state dir
	// StateDir is the state directory in use (an instance dir under the state root, or BundledConfig.StateDir).
	StateDir string
	// VolumeRoot is where named volumes live (BundledConfig.VolumeRoot or its default).
	VolumeRoot string

	egress io.Closer
	tmpDir string
	lock   *os.File // the instance lock, held while the server runs
}

// StartBundled builds the runtime (cfg.Wiring.NewRuntime), reaps leftovers
// of a killed previous run, starts the egress hub (cfg.Wiring.NewEgress) and
// the lifecycle server. Close stops everything and removes every sandbox.
func StartBundled(ctx context.Context, cfg BundledConfig) (*Bundled, error) {
	switch {
	case cfg.APIKey == "" && !cfg.NoAuth:
		return nil, errors.New("mockserver: an API key is required (or NoAuth)")
	case cfg.APIKey != "" && cfg.NoAuth:
		return nil, errors.New("mockserver: an API key and NoAuth: choose one")
	}
	wiring := cfg.Wiring.withDefaults()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxTimeout == 0 {
		cfg.MaxTimeout = 24 * time.Hour
	}
	b := &Bundled{}
	fail := func(err error) (*Bundled, error) {
		_ = b.Close()
		return nil, err
	}
	root, err := stateRoot(cfg.StateRoot)
	if err != nil && cfg.StateDir == "" {
		return nil, fmt.Errorf("state root %s: %w", root, err)
	}
	dir := cfg.StateDir
	if dir == "" {
		if cfg.InsecureNoIsolation && cfg.StateRoot == "" {
			openStateRootToUIDs(root)
		}
		if dir, b.lock, err = newInstanceDir(root); err != nil {
			return nil, fmt.Errorf("state root %s: %w", root, err)
		}
		b.tmpDir = dir
	} else {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
		if b.lock, err = lockStateDir(dir); err != nil {
			return nil, err
		}
	}
	b.StateDir = dir
	volRoot := cfg.VolumeRoot
	if cfg.PrivateVolumes {
		if cfg.VolumeRoot != "" {
			return fail(errors.New("mockserver: PrivateVolumes and VolumeRoot both set"))
		}
		volRoot = filepath.Join(dir, volumesDirName)
	} else if volRoot == "" && root != "" {
		volRoot = filepath.Join(root, volumesDirName)
	}
	b.VolumeRoot = volRoot
	if root != "" {
		b.Reaped = append(b.Reaped, reapDeadInstances(root, dir)...)
	}
	// auto-created deleteOnSandboxTermination volumes a dead server left
	b.Reaped = append(b.Reaped, SweepNamedVolumes(volRoot)...)
	rt, err := wiring.NewRuntime(RuntimeOptions{StateDir: dir, AllowInsecureNoIsolation: cfg.InsecureNoIsolation,
		DiskLimitBytes: cfg.DiskLimitBytes})
	if err != nil {
		return fail(err)
	}
	b.Runtime = rt
	if reaped, err := rt.Reap(); err != nil {
		cfg.Logger.Warn("reaping leftovers of a previous run", "err", err)
	} else {
		b.Reaped = append(b.Reaped, reaped...)
	}
	b.Reaped = append(b.Reaped, removeStaleSockets(dir)...)
	if len(b.Reaped) > 0 {
		cfg.Logger.Info("reaped leftovers of dead servers", "removed", b.Reaped)
	}
	if ok, reason := rt.Isolation(); !ok {
		cfg.Logger.Warn("sandbox isolation NOT enforced", "reason", reason)
	}
	var hub EgressHub
	var srv *Server
	rec := audit.RecorderFunc(func(ev wire.Event) {
		if srv != nil {
			srv.audit.Record(ev)
		}
	})
	watched := func() map[string]string {
		if srv != nil {
			return srv.Watched()
		}
		return nil
	}
	h, closer, err := wiring.NewEgress(EgressOptions{StateDir: dir, Upstreams: cfg.Upstreams, Audit: rec,
		DenyWebhook: cfg.DenyWebhook, PassThrough: cfg.EgressPassThrough, Watched: watched})
	if err != nil {
		return fail(fmt.Errorf("egress: %w", err))
	}
	hub, b.egress = h, closer
	pf := wiring.ProfileFor
	srv, err = New(Config{Listen: cfg.Listen, APIKey: cfg.APIKey, NoAuth: cfg.NoAuth, AdminToken: cfg.AdminToken, StateDir: dir,
		MaxTimeout: cfg.MaxTimeout, ExecdGracePeriod: cfg.ExecdGracePeriod, AllowedHostPaths: cfg.AllowedHostPaths, VolumeRoot: volRoot, RenewIntent: cfg.RenewIntent,
		DefaultLimits: cfg.DefaultLimits, TenantQuota: cfg.TenantQuota, VolumeQuotaBytes: cfg.VolumeQuotaBytes, Runtime: rt, Egress: hub, ProfileFor: pf, Logger: cfg.Logger,
		ExecdAccessToken: cfg.ExecdAccessToken.enabled(rt.Enforced()["network"])})
	if err != nil {
		return fail(err)
	}
	if err := srv.Start(ctx); err != nil {
		return fail(err)
	}
	b.Server = srv
	return b, nil
}

// Close stops the server (every sandbox killed and removed), the egress hub
// and the runtime, and removes a temporary state dir. Safe to call twice.
func (b *Bundled) Close() error {
	var errs []error
	if b.Server != nil {
		errs = append(errs, b.Server.Close())
	}
	if b.egress != nil {
		errs = append(errs, b.egress.Close())
		b.egress = nil
	}
	if b.Runtime != nil {
		errs = append(errs, b.Runtime.Close())
		b.Runtime = nil
	}
	if b.tmpDir != "" {
		errs = append(errs, os.RemoveAll(b.tmpDir))
		b.tmpDir = ""
	}
	if b.lock != nil {
		_ = b.lock.Close()
		b.lock = nil
	}
	return errors.Join(errs...)
}
