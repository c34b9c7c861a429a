package dockertarget

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	dc "github.com/ory/dockertest/v3/docker"
)

// TestRelabelledStandInNeverUpstreamOrOfficial: labels are what the image's
// builder says, so a stand-in relabelled with an upstream commit is still a
// stand-in, an unmarked image with the label only declares it (not
// verified), and a repository digest of another registry, or one this
// harness never pulled, makes nothing official.
func TestRelabelledStandInNeverUpstreamOrOfficial(t *testing.T) {
	upstream := map[string]string{LabelUpstreamCommit: "0123456789abcdef0123", LabelUpstreamComponent: "execd"}
	relabelled := map[string]string{labelStandIn: "execd", LabelUpstreamCommit: "0123456789abcdef0123"}
	ledger := &PullLedger{Path: filepath.Join(t.TempDir(), "pulls.json")}
	cases := []struct {
		name, ref string
		im        *dc.Image
		want      string
	}{
		{"stand-in relabelled with an upstream commit", "opensandbox/execd:v1.1.0", img("sha256:s", relabelled), OriginStandIn},
		{"stand-in label removed, upstream label kept", "opensandbox/execd:v1.1.0", img("sha256:s", upstream), "declares upstream commit 0123456789ab (not verified)"},
		{"pushed to a local registry under the name", "opensandbox/execd:v1.1.0", pulledImg("sha256:s", "localhost:5000/opensandbox/execd@sha256:aa", upstream), "declares upstream commit 0123456789ab (not verified)"},
		{"right repository digest, never pulled by this harness", "opensandbox/execd:v1.1.0", pulledImg("sha256:s", "opensandbox/execd@sha256:bb", nil), OriginEngine},
	}
	for _, c := range cases {
		eng := &fakeEngine{have: map[string]*dc.Image{c.ref: c.im}}
		im, err := chooseImage(context.Background(), eng, ImageConfig{Pairing: pair111, Ledger: ledger}, "execd", "", c.ref, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if im.Origin != c.want {
			t.Errorf("%s: origin %q, want %q", c.name, im.Origin, c.want)
		}
		if im.Origin == OriginOfficial || strings.Contains(im.Origin, "upstream-built") {
			t.Errorf("%s: reported as %q", c.name, im.Origin)
		}
	}
}

// TestOfficialStaysOfficialWhileItsDigestMatches: an image this harness
// pulled is official in that run and in later ones while the engine holds
// the same image under the recorded digest; retagged with another image
// under the name, it no longer is.
func TestOfficialStaysOfficialWhileItsDigestMatches(t *testing.T) {
	ledger := &PullLedger{Path: filepath.Join(t.TempDir(), "pulls.json")}
	ref := "opensandbox/execd:v1.1.0"
	eng := &fakeEngine{have: map[string]*dc.Image{}, registry: map[string]*dc.Image{ref: pulledImg("sha256:real", "opensandbox/execd@sha256:d1", nil)}}
	cfg := ImageConfig{Pairing: pair111, Ledger: ledger}
	im, err := chooseImage(context.Background(), eng, cfg, "execd", "", ref, nil)
	if err != nil || im.Origin != OriginOfficial || im.Digest != "docker.io/opensandbox/execd@sha256:d1" {
		t.Fatalf("the pull: %+v %v", im, err)
	}
	if r, ok := ledger.Lookup(im.Digest); !ok || r.ImageID != "sha256:real" || r.Ref != ref {
		t.Fatalf("the pull was not recorded: %+v %v", r, ok)
	}
	// A later run: the engine has it, no pull.
	later := &fakeEngine{have: map[string]*dc.Image{ref: pulledImg("sha256:real", "docker.io/opensandbox/execd@sha256:d1", nil)}}
	im, err = chooseImage(context.Background(), later, cfg, "execd", "", ref, nil)
	if err != nil || im.Origin != OriginOfficial || len(later.pulls) != 0 {
		t.Fatalf("a later run: %+v %v (pulls %v)", im, err, later.pulls)
	}
	// The name now points at another image (retagged) that still lists the
	// digest: its id is not the one recorded at the pull.
	swapped := &fakeEngine{have: map[string]*dc.Image{ref: pulledImg("sha256:other", "opensandbox/execd@sha256:d1",
		map[string]string{LabelUpstreamCommit: "feedface"})}}
	im, err = chooseImage(context.Background(), swapped, cfg, "execd", "", ref, nil)
	if err != nil || im.Origin != "declares upstream commit feedface (not verified)" {
		t.Fatalf("a swapped image: %+v %v", im, err)
	}
	// Given by digest: the digest must be the one the engine holds.
	byDigest := "opensandbox/execd@sha256:d1"
	eng2 := &fakeEngine{have: map[string]*dc.Image{byDigest: pulledImg("sha256:real", "opensandbox/execd@sha256:d1", nil)}}
	im, err = chooseImage(context.Background(), eng2, cfg, "execd", byDigest, "", nil)
	if err != nil || im.Origin != OriginOfficial {
		t.Fatalf("by digest: %+v %v", im, err)
	}
}

func TestRepository(t *testing.T) {
	for in, want := range map[string]string{
		"opensandbox/execd:v1.1.0":            "docker.io/opensandbox/execd",
		"docker.io/opensandbox/execd":         "docker.io/opensandbox/execd",
		"python:3.12":                         "docker.io/library/python",
		"localhost:5000/opensandbox/execd:v1": "localhost:5000/opensandbox/execd",
		"ghcr.io/x/y@sha256:00":               "ghcr.io/x/y",
		"sandbox-registry.cn-zhangjiakou.cr.aliyuncs.com/opensandbox/execd:v1.0.10": "sandbox-registry.cn-zhangjiakou.cr.aliyuncs.com/opensandbox/execd",
	} {
		if got := repository(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestCheckPairing: a version the table does not know, or a row naming no
// images, is refused naming the table, unless both images are given.
func TestCheckPairing(t *testing.T) {
	if err := CheckPairing("1.1.1", "", ""); err != nil {
		t.Error(err)
	}
	err := CheckPairing("9.9.9", "", "")
	if err == nil || !strings.Contains(err.Error(), "not in the version table (harness/dockertarget/versions.go") || !strings.Contains(err.Error(), "--execd-image") {
		t.Errorf("unknown version: %v", err)
	}
	if err := CheckPairing("9.9.9", "x/execd:1", ""); err == nil {
		t.Error("one image given is not a pairing")
	}
	if err := CheckPairing("9.9.9", "x/execd:1", "x/egress:1"); err != nil {
		t.Error(err)
	}
	if err := CheckPairing("0.1.0", "", ""); err == nil || !strings.Contains(err.Error(), "names no images") {
		t.Errorf("a row without images: %v", err)
	}
}
