package mockserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// BundledConfig configures StartBundled: the complete bundled server (Linux
// runtime + egress hub + lifecycle server) as serve-mock runs it.
type BundledConfig struct {
	Listen              string        // default 127.0.0.1:0
	APIKey              string        // required
	AdminToken          string        // empty: admin API disabled
	StateDir            string        // empty: a temporary directory removed by Close
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
}

// Bundled is a running bundled server.
type Bundled struct {
	Server  *Server
	Runtime runtime.Runtime
	Reaped  []string // what Reap removed from a previous run's state dir

	egress io.Closer
	tmpDir string
}

// StartBundled builds the runtime (NewRuntime), reaps leftovers of a killed
// previous run, starts the egress hub (NewEgress, when wired) and the
// lifecycle server. Close stops everything and removes every sandbox.
func StartBundled(ctx context.Context, cfg BundledConfig) (*Bundled, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("mockserver: an API key is required")
	}
	if NewRuntime == nil {
		return nil, errors.New("mockserver: no runtime wired (mockserver.NewRuntime is nil)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MaxTimeout == 0 {
		cfg.MaxTimeout = 24 * time.Hour
	}
	b := &Bundled{}
	dir := cfg.StateDir
	if dir == "" {
		d, err := os.MkdirTemp("", "osb-mock-")
		if err != nil {
			return nil, err
		}
		dir, b.tmpDir = d, d
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	fail := func(err error) (*Bundled, error) {
		_ = b.Close()
		return nil, err
	}
	rt, err := NewRuntime(RuntimeOptions{StateDir: dir, AllowInsecureNoIsolation: cfg.InsecureNoIsolation})
	if err != nil {
		return fail(err)
	}
	b.Runtime = rt
	if b.Reaped, err = rt.Reap(); err != nil {
		cfg.Logger.Warn("reaping leftovers of a previous run", "err", err)
	} else if len(b.Reaped) > 0 {
		cfg.Logger.Info("reaped leftovers of a previous run", "removed", b.Reaped)
	}
	if ok, reason := rt.Isolation(); !ok {
		cfg.Logger.Warn("sandbox isolation NOT enforced", "reason", reason)
	}
	var hub EgressHub
	var srv *Server
	if NewEgress != nil {
		rec := audit.RecorderFunc(func(ev audit.Event) {
			if srv != nil {
				srv.audit.Record(ev)
			}
		})
		h, closer, err := NewEgress(EgressOptions{StateDir: dir, Upstreams: cfg.Upstreams, Audit: rec,
			DenyWebhook: cfg.DenyWebhook, PassThrough: cfg.EgressPassThrough})
		if err != nil {
			return fail(fmt.Errorf("egress: %w", err))
		}
		hub, b.egress = h, closer
	}
	pf := ProfileFor
	if pf == nil {
		pf = runtime.ProfileFor
	}
	srv, err = New(Config{Listen: cfg.Listen, APIKey: cfg.APIKey, AdminToken: cfg.AdminToken, StateDir: dir,
		MaxTimeout: cfg.MaxTimeout, ExecdGracePeriod: cfg.ExecdGracePeriod, Runtime: rt, Egress: hub, ProfileFor: pf, Logger: cfg.Logger})
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
	return errors.Join(errs...)
}
