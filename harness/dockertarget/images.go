package dockertarget

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/osb-capstone/acceptance/harness/dockertarget/standin"
)

// Image names. The sandbox image is also tagged SandboxImageURI, the image
// the suite's create requests ask for, so the control plane finds it locally.
const (
	SandboxRepo     = "osb-acceptance/sandbox"
	ExecdRepo       = "osb-acceptance/execd-standin"
	EgressRepo      = "osb-acceptance/egress-standin"
	SandboxImageURI = "python:3.12"
	labelStandIn    = "org.osb-acceptance.stand-in"
)

// Image is one image the target uses, for the report.
type Image struct {
	Role string // sandbox | execd | egress
	Ref  string // name:tag the control plane is configured with
	ID   string // image id (content digest)
	// Digest is the repository digest the engine holds it under for the
	// registry and repository its name gives ("" when none: built, loaded
	// or tagged here, never pulled from there).
	Digest  string
	StandIn bool // built here in place of the official image
	// Origin is the provenance label: OriginOfficial, OriginEngine,
	// OriginDeclares(commit) or OriginStandIn (provenance.go).
	Origin string
	Note   string
	Build  time.Duration // 0 when it came from the cache
}

// ImageConfig says where the inputs are and which images to prefer.
type ImageConfig struct {
	RepoDir  string // the project's root (.ci/docker-sandbox-rootfs.sh)
	CacheDir string // rootfs tarballs are kept here by content hash
	// StubCACert is the stub CA's certificate (StubCA.CertPath), installed
	// into the sandbox image's trust store and hashed into its cache key.
	StubCACert string
	Binary     string // the acceptance binary (stand-in execd and egress)
	Log        io.Writer
	// Overrides (--execd-image, --egress-image, --sandbox-image): used as
	// named; one the engine lacks and cannot pull is an error, never a
	// silent stand-in.
	ExecdImage, EgressImage, SandboxImage string
	// Pairing names the images the server version uses by default.
	Pairing Pairing
	// PullTimeout bounds one pull attempt (default 60 s; this project's
	// engine refuses pulls at once).
	PullTimeout time.Duration
	// Ledger records the harness's pulls (what makes an image official on
	// later runs); nil keeps none.
	Ledger *PullLedger
}

// imageEngine is what the image choice needs of the engine (a dockertest
// pool's client; a fake in the unit tests).
type imageEngine interface {
	InspectImage(ref string) (*dc.Image, error)
	PullImage(ctx context.Context, ref string) error
}

type poolEngine struct{ pool *dockertest.Pool }

func (e poolEngine) InspectImage(ref string) (*dc.Image, error) {
	return e.pool.Client.InspectImage(ref)
}

func (e poolEngine) PullImage(ctx context.Context, ref string) error {
	repo, tag := splitRef(ref)
	return e.pool.Client.PullImage(dc.PullImageOptions{Repository: repo, Tag: tag, Context: ctx, InactivityTimeout: 30 * time.Second}, dc.AuthConfiguration{})
}

// EnsureImages chooses every image (chooseImage): an override first, then the
// image the server version names when the engine has it or can pull it, and a
// stand-in built here only when neither works. The sandbox image is built
// here (cached by the hash of its build scripts and the stub CA's certificate: a rerun reuses the
// tarball and the image) unless --sandbox-image names one; the server
// version names no sandbox image (the suite asks for python:3.12).
func EnsureImages(ctx context.Context, pool *dockertest.Pool, cfg ImageConfig) ([]Image, error) {
	eng := poolEngine{pool}
	var sb Image
	var err error
	if cfg.SandboxImage != "" {
		sb, err = chooseImage(ctx, eng, cfg, "sandbox", cfg.SandboxImage, "", nil)
		if err == nil && sb.Ref != SandboxImageURI {
			repo, tag := splitRef(SandboxImageURI)
			if err := pool.Client.TagImage(sb.Ref, dc.TagImageOptions{Repo: repo, Tag: tag, Force: true, Context: ctx}); err != nil {
				return nil, fmt.Errorf("tagging %s as %s: %w", sb.Ref, SandboxImageURI, err)
			}
			sb.Note = "--sandbox-image " + sb.Ref + ", tagged " + SandboxImageURI + " (what the suite asks for)"
			sb.Ref = SandboxImageURI
		}
	} else {
		sb, err = ensureSandbox(ctx, pool, cfg)
	}
	if err != nil {
		return nil, err
	}
	out := []Image{sb}
	for _, role := range []string{"execd", "egress"} {
		override, named := cfg.ExecdImage, cfg.Pairing.Execd
		if role == "egress" {
			override, named = cfg.EgressImage, cfg.Pairing.Egress
		}
		im, err := chooseImage(ctx, eng, cfg, role, override, named, func() (Image, error) {
			return ensureStandIn(ctx, pool, cfg, role, sb.ID)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, im)
	}
	return out, nil
}

// chooseImage picks one component's image: the override when given (it
// must be in the engine or pullable), else the named image when the engine
// has it or a pull brings it, else build(). The result carries its
// provenance label.
func chooseImage(ctx context.Context, eng imageEngine, cfg ImageConfig, role, override, named string, build func() (Image, error)) (Image, error) {
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "docker target: "+format+"\n", a...)
		}
	}
	if override != "" {
		im, why := findOrPull(ctx, eng, cfg, override)
		if im == nil {
			return Image{}, fmt.Errorf("--%s-image %s: %s", role, override, why)
		}
		logf("%s image %s (given; %s)", role, override, im.Origin)
		im.Role, im.Note = role, "given with --"+role+"-image"
		return *im, nil
	}
	if named != "" {
		im, why := findOrPull(ctx, eng, cfg, named)
		if im != nil {
			logf("%s image %s (named by opensandbox-server==%s; %s)", role, named, cfg.Pairing.Server, im.Origin)
			im.Role, im.Note = role, "named by opensandbox-server=="+cfg.Pairing.Server
			return *im, nil
		}
		logf("%s image %s (named by opensandbox-server==%s) cannot be had: %s; building the stand-in", role, named, cfg.Pairing.Server, why)
	}
	if build == nil {
		return Image{}, fmt.Errorf("no %s image: none given and none to build", role)
	}
	im, err := build()
	if err != nil {
		return Image{}, err
	}
	im.Origin = OriginStandIn
	im.StandIn = true
	if named != "" {
		im.Note += "; " + named + " (named by opensandbox-server==" + cfg.Pairing.Server + ") is not in the engine and could not be pulled"
	} else if role != "sandbox" {
		im.Note += "; the version table names no " + role + " image for opensandbox-server==" + cfg.Pairing.Server
	}
	return im, nil
}

// findOrPull returns the image as the engine has it, pulling it once when
// missing (nil and why when neither works).
func findOrPull(ctx context.Context, eng imageEngine, cfg ImageConfig, ref string) (*Image, string) {
	pulled := false
	got, err := eng.InspectImage(ref)
	if err != nil {
		timeout := cfg.PullTimeout
		if timeout <= 0 {
			timeout = 60 * time.Second
		}
		pctx, cancel := context.WithTimeout(ctx, timeout)
		perr := eng.PullImage(pctx, ref)
		cancel()
		if perr != nil {
			return nil, "not in the engine, and the pull failed: " + firstLine(perr.Error())
		}
		if got, err = eng.InspectImage(ref); err != nil {
			return nil, "pulled, but the engine does not show it: " + err.Error()
		}
		pulled = true
	}
	origin, digest := originOf(ref, got, pulled, cfg.Ledger)
	if why := describeOrigin(ref, origin, digest); why != "" && cfg.Log != nil {
		fmt.Fprintln(cfg.Log, "docker target: "+why)
	}
	return &Image{Ref: ref, ID: got.ID, Digest: digest, Origin: origin, StandIn: origin == OriginStandIn}, ""
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// SandboxRootfsScripts build the sandbox root filesystem (relative to the
// project's root): the script and the Debian bootstrap it sources. The
// cache key hashes them all, with the stub CA's certificate: a change to any
// rebuilds it.
var SandboxRootfsScripts = []string{".ci/docker-sandbox-rootfs.sh", ".ci/debian-rootfs.sh"}

func sandboxHash(cfg ImageConfig) (string, error) {
	h := sha256.New()
	for _, f := range SandboxRootfsScripts {
		script, err := os.ReadFile(filepath.Join(cfg.RepoDir, f))
		if err != nil {
			return "", err
		}
		h.Write(script)
	}
	ca, err := os.ReadFile(cfg.StubCACert)
	if err != nil {
		return "", fmt.Errorf("the stub CA's certificate: %w", err)
	}
	fmt.Fprintf(h, "stub-ca %x\n", sha256.Sum256(ca))
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func ensureSandbox(ctx context.Context, pool *dockertest.Pool, cfg ImageConfig) (Image, error) {
	hash, err := sandboxHash(cfg)
	if err != nil {
		return Image{}, err
	}
	ref := SandboxRepo + ":" + hash
	im := Image{Role: "sandbox", Ref: SandboxImageURI, StandIn: true, Origin: OriginStandIn,
		Note: "built here from Debian 12 packages (mmdebstrap or debootstrap minbase: python3, pandas, matplotlib, pip; not the install step's tabulate; trusts this machine's stub CA) as " + ref}
	start := time.Now()
	if got, err := pool.Client.InspectImage(ref); err == nil {
		im.ID = got.ID
	} else {
		tarball := filepath.Join(cfg.CacheDir, "rootfs-"+hash+".tar")
		if _, err := os.Stat(tarball); err != nil {
			fmt.Fprintf(cfg.Log, "docker target: building the sandbox root filesystem (mmdebstrap or debootstrap, a few minutes; cached as %s)\n", tarball)
			if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
				return Image{}, err
			}
			cmd := exec.CommandContext(ctx, "bash", filepath.Join(cfg.RepoDir, ".ci", "docker-sandbox-rootfs.sh"), tarball, cfg.StubCACert)
			cmd.Stdout, cmd.Stderr = cfg.Log, cfg.Log
			if err := cmd.Run(); err != nil {
				return Image{}, fmt.Errorf("building the sandbox rootfs: %w", err)
			}
		}
		f, err := os.Open(tarball)
		if err != nil {
			return Image{}, err
		}
		if st, err := f.Stat(); err == nil {
			fmt.Fprintf(cfg.Log, "docker target: importing the sandbox image from %s (%d MB) as %s\n", tarball, st.Size()>>20, ref)
		}
		err = pool.Client.ImportImage(dc.ImportImageOptions{Repository: SandboxRepo, Tag: hash, Source: "-", InputStream: f, OutputStream: io.Discard, Context: ctx})
		_ = f.Close()
		if err != nil {
			return Image{}, fmt.Errorf("importing the sandbox image: %w", err)
		}
		got, err := pool.Client.InspectImage(ref)
		if err != nil {
			return Image{}, err
		}
		im.ID = got.ID
		im.Build = time.Since(start)
	}
	repo, tag := splitRef(SandboxImageURI)
	if err := pool.Client.TagImage(ref, dc.TagImageOptions{Repo: repo, Tag: tag, Force: true, Context: ctx}); err != nil {
		return Image{}, fmt.Errorf("tagging %s as %s: %w", ref, SandboxImageURI, err)
	}
	return im, nil
}

// bootstrapScript is the stand-in /bootstrap.sh: execd in the background,
// then the sandbox's own entrypoint in the foreground.
const bootstrapScript = `#!/bin/sh
# STAND-IN bootstrap (osb-capstone acceptance suite), not OpenSandbox's.
EXECD="${EXECD:-/opt/opensandbox/execd}"
"$EXECD" ` + standin.ExecdArg + ` &
if [ "$#" -eq 0 ]; then wait; exit $?; fi
exec "$@"
`

func ensureStandIn(ctx context.Context, pool *dockertest.Pool, cfg ImageConfig, role, baseID string) (Image, error) {
	bin, err := os.ReadFile(cfg.Binary)
	if err != nil {
		return Image{}, fmt.Errorf("reading the acceptance binary for the %s stand-in: %w", role, err)
	}
	var dockerfile string
	files := map[string][]byte{}
	switch role {
	case "execd":
		files["execd"] = bin
		files["bootstrap.sh"] = []byte(bootstrapScript)
		dockerfile = "FROM " + baseID + "\nCOPY execd /execd\nCOPY bootstrap.sh /bootstrap.sh\nRUN chmod 0755 /execd /bootstrap.sh\n"
	case "egress":
		files["osb-egress"] = bin
		dockerfile = "FROM " + baseID + "\nCOPY osb-egress /usr/local/bin/osb-egress\nRUN chmod 0755 /usr/local/bin/osb-egress\n" +
			"ENTRYPOINT [\"/usr/local/bin/osb-egress\", \"" + standin.EgressArg + "\"]\n"
	}
	dockerfile += "LABEL " + labelStandIn + "=" + role + "\n"
	files["Dockerfile"] = []byte(dockerfile)
	h := sha256.New()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s %x\n", n, sha256.Sum256(files[n]))
	}
	tag := hex.EncodeToString(h.Sum(nil))[:16]
	repo := ExecdRepo
	if role == "egress" {
		repo = EgressRepo
	}
	ref := repo + ":" + tag
	im := Image{Role: role, Ref: ref, StandIn: true, Origin: OriginStandIn, Note: "stand-in built from this project's acceptance binary (" + role + " mode), not opensandbox/" + role}
	if got, err := pool.Client.InspectImage(ref); err == nil {
		im.ID = got.ID
		return im, nil
	}
	start := time.Now()
	fmt.Fprintf(cfg.Log, "docker target: building the %s stand-in image %s\n", role, ref)
	var ctxTar bytes.Buffer
	tw := tar.NewWriter(&ctxTar)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o755, Size: int64(len(files[n])), ModTime: time.Unix(0, 0)}); err != nil {
			return Image{}, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return Image{}, err
		}
	}
	if err := tw.Close(); err != nil {
		return Image{}, err
	}
	var buildLog bytes.Buffer
	err = pool.Client.BuildImage(dc.BuildImageOptions{
		Name: ref, InputStream: &ctxTar, OutputStream: &buildLog, RmTmpContainer: true, ForceRmTmpContainer: true,
		Context: ctx, InactivityTimeout: 2 * time.Minute,
	})
	if err != nil {
		return Image{}, fmt.Errorf("building the %s stand-in: %w\n%s", role, err, tail(buildLog.String(), 2000))
	}
	got, err := pool.Client.InspectImage(ref)
	if err != nil {
		return Image{}, err
	}
	im.ID, im.Build = got.ID, time.Since(start)
	pruneOlder(pool, repo, ref)
	return im, nil
}

// pruneOlder removes the other tags of a stand-in repository (images built
// from earlier binaries); one still used by a container stays.
func pruneOlder(pool *dockertest.Pool, repo, keep string) {
	list, err := pool.Client.ListImages(dc.ListImagesOptions{Filters: map[string][]string{"reference": {repo}}})
	if err != nil {
		return
	}
	for _, im := range list {
		for _, tag := range im.RepoTags {
			if tag != keep && strings.HasPrefix(tag, repo+":") {
				_ = pool.Client.RemoveImage(tag)
			}
		}
	}
}

func splitRef(ref string) (string, string) {
	for i := len(ref) - 1; i >= 0; i-- {
		if ref[i] == ':' {
			return ref[:i], ref[i+1:]
		}
		if ref[i] == '/' {
			break
		}
	}
	return ref, "latest"
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
