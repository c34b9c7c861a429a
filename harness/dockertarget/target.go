package dockertarget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ory/dockertest/v3"
)

// Config configures Start.
type Config struct {
	ServerVersion string    // opensandbox-server version (default DefaultServerVersion)
	Endpoint      string    // Docker endpoint (default Endpoint())
	RepoDir       string    // the project's root
	CacheDir      string    // venvs, rootfs tarballs and run-time pins (default CacheDir(): one per machine)
	Binary        string    // the acceptance binary (default os.Executable())
	Log           io.Writer // progress; nil discards
	// ExecdImage, EgressImage, SandboxImage override the image choice
	// (--execd-image, --egress-image, --sandbox-image).
	ExecdImage, EgressImage, SandboxImage string
	// Stubs maps the stub names the sandboxes may reach to the loopback URL
	// of the stub serving each (http://127.0.0.1:port); they are offered on
	// the engine's bridge address (BridgeServices). Nil: none.
	Stubs map[string]string
	// TLSStubs are served the same way over HTTPS on the bridge's port 443,
	// with a certificate from the machine's stub CA (stubca.go), which the
	// suite's own sandbox image trusts: the stub package index as pypi.org
	// and files.pythonhosted.org. Nil: none.
	TLSStubs map[string]string
}

// Component is one piece of the stack, for the report's header.
type Component struct {
	Name    string `json:"name"`
	Version string `json:"version"` // version or image id
	Origin  string `json:"origin"`  // a provenance label: official, from the engine, declares upstream commit X (not verified), stand-in
	Note    string `json:"note,omitempty"`
}

// Target is a running real OpenSandbox on Docker.
type Target struct {
	URL        string // the control plane's root URL (http://127.0.0.1:PORT)
	APIKey     string
	Version    string
	Components []Component
	// Pairing is the version table's row for Version (Known false: the
	// table does not know it).
	Pairing      Pairing
	PairingKnown bool
	// Pin says how the control plane's requirements were had (committed,
	// or resolved at run time with its file and hash).
	Pin PinInfo
	// Timings of the set-up, for the closing note.
	ImageBuild time.Duration
	Venv       time.Duration // installing (or reusing) the control plane's venv
	Startup    time.Duration

	// Stubs are the stubs offered on the bridge (nil: none could be) and
	// StubNote says why not, or what a sandbox needs to reach them.
	Stubs    *BridgeServices
	StubNote string

	pool      *dockertest.Pool // the engine (sidecar logs, sandbox fates)
	serverLog string           // the control plane's log (SandboxFate)
	started   time.Time        // when the control plane started (the engine events SandboxFate reads)
	endpoint  string           // the engine's endpoint (its events, its start time)

	closeOnce sync.Once
	closeFn   func() error
	closeErr  error
}

// StandIns lists the components that are stand-ins ("" when none).
func (t *Target) StandIns() []string {
	var out []string
	for _, c := range t.Components {
		if c.Origin == "stand-in" {
			out = append(out, c.Name)
		}
	}
	return out
}

// Close stops the control plane and removes every container and volume it
// created; it is safe to call more than once.
func (t *Target) Close() error {
	t.closeOnce.Do(func() { t.closeErr = t.closeFn() })
	return t.closeErr
}

// Start stands the stack up: engine check, leftovers of a crashed run
// reaped, images built or reused, the pinned control plane installed and
// started with a fresh API key.
func Start(ctx context.Context, cfg Config) (*Target, error) {
	if cfg.ServerVersion == "" {
		cfg.ServerVersion = DefaultServerVersion
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Endpoint == "" {
		cfg.Endpoint = Endpoint()
	}
	if cfg.RepoDir == "" {
		wd, _ := os.Getwd()
		cfg.RepoDir = findRepo(wd)
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = CacheDir()
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		cfg.Binary = exe
	}
	if err := CheckPairing(cfg.ServerVersion, cfg.ExecdImage, cfg.EgressImage); err != nil {
		return nil, err
	}
	pin, err := ResolvePin(ctx, cfg.RepoDir, cfg.CacheDir, cfg.ServerVersion, cfg.Log)
	if err != nil {
		return nil, err
	}
	pairing, known := PairingFor(cfg.ServerVersion)
	pool, err := Connect(ctx, cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	dir := stateDir()
	lk, err := acquireLock(ctx, dir, lockWait(), cfg.Log)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			lk.release()
		}
	}()
	if msg, err := reapCrashed(pool, dir, cfg.Endpoint); err != nil {
		return nil, fmt.Errorf("reaping a crashed run's leftovers: %w", err)
	} else if msg != "" {
		fmt.Fprintln(cfg.Log, "docker target: "+msg)
	}

	// The stub CA is the machine's, with the engine's run state (not in a
	// checkout's cache): every checkout then builds the same sandbox image,
	// and a fresh clone finds it in the engine.
	ca, err := EnsureStubCA(filepath.Join(dir, "stub-ca"))
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	images, err := EnsureImages(ctx, pool, ImageConfig{RepoDir: cfg.RepoDir, CacheDir: filepath.Join(cfg.CacheDir, "rootfs"), StubCACert: ca.CertPath, Binary: cfg.Binary, Log: cfg.Log,
		ExecdImage: cfg.ExecdImage, EgressImage: cfg.EgressImage, SandboxImage: cfg.SandboxImage, Pairing: pairing,
		Ledger: &PullLedger{Path: filepath.Join(dir, "pulls.json")}})
	if err != nil {
		return nil, err
	}
	build := time.Since(t0)
	tv := time.Now()
	bin, err := ensureVenv(ctx, filepath.Join(cfg.CacheDir, "server-"+cfg.ServerVersion+"-"+pin.SHA256[:12]), cfg.ServerVersion, pin.Requirements, cfg.Log)
	if err != nil {
		return nil, err
	}

	var bridge *BridgeServices
	stubNote := ""
	if len(cfg.Stubs) > 0 || len(cfg.TLSStubs) > 0 {
		bridge, stubNote = startBridge(pool, cfg.Endpoint, cfg.Stubs, cfg.TLSStubs, ca)
		if bridge != nil {
			fmt.Fprintf(cfg.Log, "docker target: stubs on the bridge %s (%s): resolver :53 for %s, plain HTTP :80 for %s, HTTPS :443 for %s (stub CA)\n",
				bridge.Bridge.Addr, bridge.Bridge.Iface, strings.Join(append(sortedKeys(cfg.Stubs), sortedKeys(cfg.TLSStubs)...), ", "),
				strings.Join(sortedKeys(cfg.Stubs), ", "), strings.Join(sortedKeys(cfg.TLSStubs), ", "))
			if len(cfg.TLSStubs) > 0 && cfg.SandboxImage != "" {
				fmt.Fprintf(cfg.Log, "docker target: --sandbox-image %s does not trust the stub CA (%s) unless it was built to: its pip refuses the stub index's certificate\n", cfg.SandboxImage, ca.CertPath)
			}
		}
		if stubNote != "" {
			fmt.Fprintln(cfg.Log, "docker target: "+stubNote)
		}
	}
	defer func() {
		if !ok {
			_ = bridge.Close()
		}
	}()

	runDir := filepath.Join(dir, "run")
	_ = os.RemoveAll(runDir)
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	key := "osb-docker-" + randHex(16)
	sc := serverConfig{Port: port, APIKey: key, StoreDir: runDir, PortMin: 20100, PortMax: 20999}
	for _, im := range images {
		switch im.Role {
		case "execd":
			sc.ExecdImage = im.Ref
		case "egress":
			sc.EgressImage = im.Ref
		}
	}
	started := time.Now().UTC()
	serverLog := filepath.Join(runDir, "server.log")
	rec := runRecord{Endpoint: cfg.Endpoint, Started: started, ServerLog: serverLog}
	if err := writeRecord(dir, rec); err != nil {
		return nil, err
	}
	t1 := time.Now()
	proc, err := startServer(ctx, bin, runDir, cfg.Endpoint, sc, cfg.Log)
	if err != nil {
		_, _ = removeServerContainers(pool, started, serverLog)
		_ = os.Remove(recordPath(dir))
		return nil, err
	}
	rec.ServerPID = proc.cmd.Process.Pid
	_ = writeRecord(dir, rec)

	t := &Target{URL: proc.URL, APIKey: key, Version: cfg.ServerVersion, ImageBuild: build, Venv: t1.Sub(tv), Startup: time.Since(t1),
		Pairing: pairing, PairingKnown: known, Pin: pin, pool: pool, Stubs: bridge, StubNote: stubNote, serverLog: serverLog,
		started: started, endpoint: cfg.Endpoint}
	t.Components = append(t.Components, Component{Name: "control plane", Version: "opensandbox-server==" + cfg.ServerVersion, Origin: "official", Note: "from PyPI, " + pin.Describe()})
	if v, err := pool.Client.Version(); err == nil {
		t.Components = append(t.Components, Component{Name: "docker engine", Version: v.Get("Version"), Origin: "official", Note: "Debian docker.io, own bridge, no forwarding/NAT"})
	}
	for _, im := range images {
		origin := im.Origin
		if origin == "" {
			origin = OriginStandIn
		}
		note := im.Note
		if im.Digest != "" {
			note += "; repository digest " + im.Digest
		}
		t.Components = append(t.Components, Component{Name: im.Role + " image " + im.Ref, Version: im.ID, Origin: origin, Note: note})
	}
	t.closeFn = func() error {
		defer lk.release()
		proc.stop()
		_, err := removeServerContainers(pool, started, serverLog)
		if err == nil {
			_ = os.Remove(recordPath(dir))
		}
		if berr := bridge.Close(); berr != nil && err == nil {
			err = fmt.Errorf("removing the bridge's INPUT exceptions: %w", berr)
		}
		return err
	}
	ok = true
	return t, nil
}

// startBridge offers the stubs on the engine's bridge. A failure is not the
// run's: the stubs are then unreachable from sandboxes and the note says why
// (the checks that need them say not measured).
func startBridge(pool *dockertest.Pool, endpoint string, stubs, tlsStubs map[string]string, ca *StubCA) (*BridgeServices, string) {
	b, err := engineBridge(pool)
	if err != nil {
		return nil, "the stubs are not offered to sandboxes: " + err.Error()
	}
	b.Attribute = sandboxAtAddr(pool)           // the front names the sandbox that sent each request
	_ = removeVaultRules(b.iptables(), b.Iface) // a crashed run's (the caller holds the lock)
	var front *TLSFront
	if len(tlsStubs) > 0 {
		cert, err := ca.Leaf(sortedKeys(tlsStubs))
		if err != nil {
			return nil, "the stubs are not offered to sandboxes: " + err.Error()
		}
		front = &TLSFront{Stubs: tlsStubs, Cert: cert}
	}
	s, err := StartBridgeServicesTLS(b, stubs, front)
	if err != nil {
		return nil, "the stubs are not offered to sandboxes: " + err.Error()
	}
	servers, known := engineDNS(endpoint)
	return s, resolverNote(servers, known, b.Addr)
}

// resolverNote says why sandboxes cannot resolve the stub names when the
// engine's container resolver (its --dns) is not the bridge address ("":
// it is).
func resolverNote(servers []string, known bool, addr net.IP) string {
	switch {
	case !known:
		return fmt.Sprintf("the engine's container resolver cannot be read here: sandboxes reach the stubs only if it is %s", addr)
	case !slices.Contains(servers, addr.String()):
		given := strings.Join(servers, ", ")
		if given == "" {
			given = "of the host's resolv.conf"
		}
		return fmt.Sprintf("the engine gives containers the resolver %s, not the bridge address %s, so no sandbox can resolve a stub name: restart it with `.ci/docker-engine.sh stop && make docker-engine` (its --dns is the bridge address since 2026-12-01)",
			given, addr)
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func findRepo(dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
