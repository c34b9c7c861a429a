package dockertarget

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
	"github.com/stretchr/testify/require"
)

// fakeEngine has the images in have; a pull brings one from registry, or
// fails like this project's engine (a closed proxy) when it is not there.
type fakeEngine struct {
	have     map[string]*dc.Image
	registry map[string]*dc.Image
	pulls    []string
}

func (f *fakeEngine) InspectImage(ref string) (*dc.Image, error) {
	if im, ok := f.have[ref]; ok {
		return im, nil
	}
	return nil, dc.ErrNoSuchImage
}

func (f *fakeEngine) PullImage(_ context.Context, ref string) error {
	f.pulls = append(f.pulls, ref)
	if im, ok := f.registry[ref]; ok {
		f.have[ref] = im
		return nil
	}
	return errors.New(`Error response from daemon: Get "https://registry-1.docker.io/v2/": proxyconnect tcp: dial tcp 127.0.0.1:9: connect: connection refused`)
}

func img(id string, labels map[string]string) *dc.Image {
	return &dc.Image{ID: id, Config: &dc.Config{Labels: labels}}
}

// pulledImg is an image as the engine holds it after a pull: with the
// repository digest the registry served.
func pulledImg(id, repoDigest string, labels map[string]string) *dc.Image {
	im := img(id, labels)
	im.RepoDigests = []string{repoDigest}
	return im
}

var pair111 = Pairing{Server: "1.1.1", Execd: "opensandbox/execd:v1.1.0", Egress: "opensandbox/egress:v1.1.7"}

func standInBuild(called *int) func() (Image, error) {
	return func() (Image, error) {
		*called++
		return Image{Role: "execd", Ref: ExecdRepo + ":abc", ID: "sha256:standin", StandIn: true, Note: "stand-in built from this project's acceptance binary"}, nil
	}
}

func TestChooseImageFromEngineUsedAndLabelled(t *testing.T) {
	eng := &fakeEngine{have: map[string]*dc.Image{"opensandbox/execd:v1.1.0": img("sha256:real", nil)}}
	built := 0
	im, err := chooseImage(context.Background(), eng, ImageConfig{Pairing: pair111}, "execd", "", pair111.Execd, standInBuild(&built))
	if err != nil {
		t.Fatal(err)
	}
	if im.Ref != "opensandbox/execd:v1.1.0" || im.ID != "sha256:real" || im.Origin != OriginEngine || im.StandIn || built != 0 {
		t.Fatalf("the engine's image was not used as it is: %+v (stand-in builds %d)", im, built)
	}
	if len(eng.pulls) != 0 {
		t.Errorf("an image the engine has was pulled: %v", eng.pulls)
	}
}

func TestChooseImageUpstreamBuiltLabelled(t *testing.T) {
	eng := &fakeEngine{have: map[string]*dc.Image{"opensandbox/egress:v1.1.7": img("sha256:up",
		map[string]string{LabelUpstreamCommit: "3bb6fad3f00dfeedfacecafe0123456789abcdef", LabelUpstreamComponent: "egress"})}}
	im, err := chooseImage(context.Background(), eng, ImageConfig{Pairing: pair111}, "egress", "", pair111.Egress, nil)
	if err != nil {
		t.Fatal(err)
	}
	if im.Origin != "declares upstream commit 3bb6fad3f00d (not verified)" || im.StandIn {
		t.Fatalf("origin %q", im.Origin)
	}
}

func TestChooseImagePulledIsOfficial(t *testing.T) {
	eng := &fakeEngine{have: map[string]*dc.Image{}, registry: map[string]*dc.Image{"opensandbox/execd:v1.1.0": pulledImg("sha256:pulled", "opensandbox/execd@sha256:d1", nil)}}
	im, err := chooseImage(context.Background(), eng, ImageConfig{Pairing: pair111}, "execd", "", pair111.Execd, nil)
	if err != nil {
		t.Fatal(err)
	}
	if im.Origin != OriginOfficial || im.ID != "sha256:pulled" {
		t.Fatalf("%+v", im)
	}
}

func TestChooseImageOverrideWins(t *testing.T) {
	eng := &fakeEngine{have: map[string]*dc.Image{
		"opensandbox/execd:v1.1.0": img("sha256:named", nil),
		"mine/execd:dev":           img("sha256:mine", map[string]string{LabelUpstreamCommit: "abc123"}),
	}}
	built := 0
	im, err := chooseImage(context.Background(), eng, ImageConfig{Pairing: pair111}, "execd", "mine/execd:dev", pair111.Execd, standInBuild(&built))
	if err != nil {
		t.Fatal(err)
	}
	if im.Ref != "mine/execd:dev" || im.ID != "sha256:mine" || im.Origin != "declares upstream commit abc123 (not verified)" || built != 0 {
		t.Fatalf("the override did not win: %+v", im)
	}
	// An override the engine lacks and cannot pull is an error, never a silent stand-in.
	_, err = chooseImage(context.Background(), eng, ImageConfig{Pairing: pair111}, "execd", "nope/execd:x", pair111.Execd, standInBuild(&built))
	if err == nil || !strings.Contains(err.Error(), "--execd-image nope/execd:x") || !strings.Contains(err.Error(), "pull failed") || built != 0 {
		t.Fatalf("missing override: err %v, stand-in builds %d", err, built)
	}
}

func TestChooseImageStandInIsTheFallback(t *testing.T) {
	eng := &fakeEngine{have: map[string]*dc.Image{}}
	built := 0
	im, err := chooseImage(context.Background(), eng, ImageConfig{Pairing: pair111}, "execd", "", pair111.Execd, standInBuild(&built))
	if err != nil {
		t.Fatal(err)
	}
	if built != 1 || !im.StandIn || im.Origin != OriginStandIn {
		t.Fatalf("no stand-in fallback: %+v (builds %d)", im, built)
	}
	if len(eng.pulls) != 1 || eng.pulls[0] != pair111.Execd {
		t.Errorf("the named image was not tried first: pulls %v", eng.pulls)
	}
	if !strings.Contains(im.Note, "opensandbox/execd:v1.1.0 (named by opensandbox-server==1.1.1) is not in the engine and could not be pulled") {
		t.Errorf("note does not say why: %q", im.Note)
	}
	// A version the table does not know: the stand-in, saying so.
	im, err = chooseImage(context.Background(), eng, ImageConfig{Pairing: Pairing{Server: "9.9.9"}}, "execd", "", "", standInBuild(&built))
	if err != nil || !im.StandIn || !strings.Contains(im.Note, "names no execd image for opensandbox-server==9.9.9") {
		t.Fatalf("unknown pairing: %+v %v", im, err)
	}
}

func TestPairingsTable(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range Pairings {
		if seen[p.Server] {
			t.Errorf("%s twice", p.Server)
		}
		seen[p.Server] = true
		if p.Execd != "" && (!strings.HasPrefix(p.Execd, "opensandbox/execd:v") || !strings.HasPrefix(p.Egress, "opensandbox/egress:v")) {
			t.Errorf("%s: %q %q", p.Server, p.Execd, p.Egress)
		}
	}
	p, ok := PairingFor(DefaultServerVersion)
	if !ok || p.Execd != "opensandbox/execd:v1.1.0" || p.Egress != "opensandbox/egress:v1.1.7" {
		t.Errorf("default version's pairing: %+v %v", p, ok)
	}
	if _, ok := PairingFor("0.0.0"); ok {
		t.Error("an unknown version has a pairing")
	}
	for _, p := range Pairings {
		if (p.Execd == "") != (p.Egress == "") || (p.Execd == "" && p.Note == "") {
			t.Errorf("%s: a row without images must say why: %+v", p.Server, p)
		}
	}
	if md := VersionTableMarkdown(); !strings.Contains(md, "| 1.1.1 | `opensandbox/execd:v1.1.0` | `opensandbox/egress:v1.1.7` |") {
		t.Error(md)
	}
}

func TestClassifyStart(t *testing.T) {
	cases := map[string]string{
		"Traceback (most recent call last):\n  File \"x\"\nModuleNotFoundError: No module named 'opensandbox_server.services.fast_sandbox.generated'\n": StartImportFailed,
		"pydantic_core._pydantic_core.ValidationError: 1 validation error for AppConfig\nruntime.type\n  Input should be 'docker'":                      StartConfigRefused,
		"docker.errors.DockerException: Error while fetching server API version: ('Connection aborted.')":                                               StartEngineRefused,
		"something else entirely": StartUnclassified,
	}
	for log, want := range cases {
		e := classifyStart("exited during start-up", log)
		if e.Class != want {
			t.Errorf("%q: %q, want %q", log, e.Class, want)
		}
		if !strings.Contains(e.Error(), "target failure") || !strings.Contains(e.Error(), "not of any submission") || !strings.Contains(e.Error(), strings.TrimSpace(log)[:10]) {
			t.Errorf("message: %s", e.Error())
		}
	}
}

func TestResolvePinCommitted(t *testing.T) {
	p, err := ResolvePin(context.Background(), "/nonexistent", t.TempDir(), DefaultServerVersion, nil)
	if err != nil || !p.Committed || len(p.SHA256) != 64 || !strings.Contains(p.Describe(), "committed") {
		t.Fatalf("%+v %v", p, err)
	}
	if _, err := ResolvePin(context.Background(), "/nonexistent", t.TempDir(), "1.1; rm -rf /", nil); err == nil {
		t.Fatal("a malformed version was accepted")
	}
}

func TestResolvePinRunTimeFromCache(t *testing.T) {
	cache := t.TempDir()
	// A pin resolved by an earlier run is reused without contacting PyPI (the
	// repo dir does not exist: running the pin script would fail).
	if err := writeFileAll(cache+"/pins/opensandbox-server-0.1.9.txt", "opensandbox-server==0.1.9 --hash=sha256:00\n"); err != nil {
		t.Fatal(err)
	}
	p, err := ResolvePin(context.Background(), "/nonexistent", cache, "0.1.9", nil)
	if err != nil || p.Committed || !strings.Contains(p.Describe(), "NOT committed") || !strings.Contains(p.Describe(), "pins/opensandbox-server-0.1.9.txt") {
		p.Requirements = nil
		t.Fatalf("%+v %v", p, err)
	}
}

func writeFileAll(path, content string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(content), 0o644)
}

// TestDocsShowTheVersionTable keeps docs/docker.md's table equal to Pairings.
func TestDocsShowTheVersionTable(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "docker.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), VersionTableMarkdown()) {
		t.Errorf("docs/docker.md does not show the version table as versions.go has it:\n%s", VersionTableMarkdown())
	}
}

// TestLockWaitsForAnotherRun: a second run waits for the engine's lock
// (bounded), then gets it once the first run releases it.
func TestLockWaitsForAnotherRun(t *testing.T) {
	dir := t.TempDir()
	first, err := acquireLock(context.Background(), dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := acquireLock(context.Background(), dir, 0, nil); err == nil || !strings.Contains(err.Error(), "another docker-target run holds") {
		t.Fatalf("no wait: %v", err)
	}
	go func() { time.Sleep(500 * time.Millisecond); first.release() }()
	var log strings.Builder
	second, err := acquireLock(context.Background(), dir, 10*time.Second, &log)
	if err != nil {
		t.Fatal(err)
	}
	second.release()
	if !strings.Contains(log.String(), "waiting up to 10s") {
		t.Errorf("log: %q", log.String())
	}
}

// TestSandboxHashCoversWhatTheScriptSources: the sandbox root filesystem's
// cache key hashes every file its script sources (the Debian bootstrap it
// shares with the grader image's) and the stub CA's certificate, and a change
// to any of them changes it.
func TestSandboxHashCoversWhatTheScriptSources(t *testing.T) {
	root := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(root, SandboxRootfsScripts[0]))
	require.NoError(t, err)
	sourced := regexp.MustCompile(`(?m)^\s*(?:\.|source) "\$\(dirname "\$0"\)/([^"]+)"`).FindAllSubmatch(script, -1)
	require.NotEmpty(t, sourced, "the script sources the shared bootstrap")
	for _, m := range sourced {
		require.Contains(t, SandboxRootfsScripts, ".ci/"+string(m[1]), "a sourced file the cache key does not hash")
	}
	repo, caDir := t.TempDir(), t.TempDir()
	ca, err := EnsureStubCA(caDir)
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(repo, ".ci"), 0o755))
	for _, f := range SandboxRootfsScripts {
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(repo, f), b, 0o644))
	}
	cfg := ImageConfig{RepoDir: repo, StubCACert: ca.CertPath}
	before, err := sandboxHash(cfg)
	require.NoError(t, err)
	// Another machine's CA is another image.
	other, err := EnsureStubCA(t.TempDir())
	require.NoError(t, err)
	if h, err := sandboxHash(ImageConfig{RepoDir: repo, StubCACert: other.CertPath}); err != nil || h == before {
		t.Errorf("another stub CA leaves the sandbox rootfs's cache key %s (%v)", before, err)
	}
	for _, f := range SandboxRootfsScripts {
		p := filepath.Join(repo, f)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, append(b, "# changed\n"...), 0o644))
		after, err := sandboxHash(cfg)
		require.NoError(t, err)
		if after == before {
			t.Errorf("changing %s leaves the sandbox rootfs's cache key %s", f, before)
		}
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
}
