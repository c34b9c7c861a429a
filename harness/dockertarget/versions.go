package dockertarget

import (
	"fmt"
	"strings"
)

// Pairing is one published opensandbox-server version and the component
// images its own package names (opensandbox_server/examples/example.config.toml
// inside the PyPI wheel: `[runtime] execd_image`, `[egress] image`). The
// docker target uses these by default when the engine has them or can pull
// them (it cannot, on this project's engine: pulls fail at once), and builds
// stand-ins only when neither works.
type Pairing struct {
	Server string // opensandbox-server version on PyPI
	Execd  string // the execd image that version names
	Egress string // the egress image that version names
	// Note says where the pairing cannot be had or the version does not work
	// as published ("" when nothing is known against it).
	Note string
}

// Pairings is the pinned version table: every opensandbox-server version
// published on PyPI (pip index versions, 2026-12-02: 1.1.1 … 0.1.0; there is
// no 0.1.8), each with the images its wheel's example.config.toml names
// (read from each wheel, 2026-12-02). A version not in it is refused
// (CheckPairing) unless both images are given. TestPairingsTable keeps it
// well-formed; TestDocsShowTheVersionTable keeps docs/docker.md equal to it.
var Pairings = []Pairing{
	{Server: "1.1.1", Execd: "opensandbox/execd:v1.1.0", Egress: "opensandbox/egress:v1.1.7"},
	{Server: "1.1.0", Execd: "opensandbox/execd:v1.1.0", Egress: "opensandbox/egress:v1.1.7",
		Note: "the published package fails at start-up (ModuleNotFoundError: opensandbox_server.services.fast_sandbox.generated): an upstream packaging defect"},
	{Server: "0.2.3", Execd: "opensandbox/execd:v1.0.22", Egress: "opensandbox/egress:v1.1.7"},
	{Server: "0.2.2", Execd: "opensandbox/execd:v1.0.21", Egress: "opensandbox/egress:v1.1.4"},
	{Server: "0.2.1", Execd: "opensandbox/execd:v1.0.20", Egress: "opensandbox/egress:v1.1.3"},
	{Server: "0.2.0", Execd: "opensandbox/execd:v1.0.19", Egress: "opensandbox/egress:v1.1.0"},
	{Server: "0.1.14", Execd: "opensandbox/execd:v1.0.16", Egress: "opensandbox/egress:v1.0.12"},
	{Server: "0.1.13", Execd: "opensandbox/execd:v1.0.14", Egress: "opensandbox/egress:v1.0.10"},
	{Server: "0.1.12", Execd: "opensandbox/execd:v1.0.13", Egress: "opensandbox/egress:v1.0.8"},
	{Server: "0.1.11", Execd: "opensandbox/execd:v1.0.12", Egress: "opensandbox/egress:v1.0.8"},
	{Server: "0.1.10", Execd: "opensandbox/execd:v1.0.10", Egress: "opensandbox/egress:v1.0.6"},
	{Server: "0.1.9", Execd: "opensandbox/execd:v1.0.7", Egress: "opensandbox/egress:v1.0.3"},
	{Server: "0.1.7", Execd: "opensandbox/execd:v1.0.6", Egress: "opensandbox/egress:v1.0.3"},
	{Server: "0.1.6", Execd: "opensandbox/execd:v1.0.6", Egress: "opensandbox/egress:v1.0.1"},
	{Server: "0.1.5", Execd: "opensandbox/execd:v1.0.6", Egress: "opensandbox/egress:v1.0.1"},
	{Server: "0.1.4", Note: noImagesNamed},
	{Server: "0.1.3", Note: noImagesNamed},
	{Server: "0.1.2", Note: noImagesNamed},
	{Server: "0.1.1", Note: noImagesNamed},
	{Server: "0.1.0", Note: noImagesNamed},
}

// noImagesNamed: the first releases ship no example config and their
// execd_image setting has no default.
const noImagesNamed = "names no images: the wheel ships no example config and `execd_image` has no default (give both with --execd-image and --egress-image); it installs as a top-level `src` package"

// CheckPairing refuses a version whose execd and egress images are unknown:
// one not in the version table, or a row that names none, unless both
// images are given (execd, egress: --execd-image, --egress-image). A stand-in
// is never chosen silently for a version nobody paired.
func CheckPairing(version, execd, egress string) error {
	p, known := PairingFor(version)
	if execd != "" && egress != "" {
		return nil
	}
	switch {
	case !known:
		return fmt.Errorf("opensandbox-server==%s is not in the version table (harness/dockertarget/versions.go, shown in docs/docker.md \"The version table\"): "+
			"its execd and egress images are unknown; add its row (read from its wheel's example.config.toml) or give both --execd-image and --egress-image", version)
	case p.Execd == "" || p.Egress == "":
		return fmt.Errorf("opensandbox-server==%s %s", version, p.Note)
	}
	return nil
}

// PairingFor returns the table's row for a server version; ok is false for a
// version the table does not know (CheckPairing refuses it unless both
// images are given).
func PairingFor(version string) (Pairing, bool) {
	for _, p := range Pairings {
		if p.Server == version {
			return p, true
		}
	}
	return Pairing{Server: version}, false
}

// Provenance labels: where a component image came from. The report carries
// them per component (versions "component: …" → "<id> (<label>)") and per
// entry for the components its verdict rests on (rubric.DependsOn).
const (
	// OriginOfficial: pulled by this harness from the registry its name
	// gives, and the engine still holds it under the repository digest
	// recorded at that pull (provenance.go).
	OriginOfficial = "official"
	// OriginEngine: present in the engine already, not built here and not
	// pulled by this harness; its origin cannot be verified.
	OriginEngine = "from the engine"
	// OriginDeclaresPrefix … OriginNotVerified: "declares upstream commit X
	// (not verified)": the image carries LabelUpstreamCommit=X, which anyone
	// can set (OriginDeclares).
	OriginDeclaresPrefix = "declares upstream commit "
	OriginNotVerified    = " (not verified)"
	// OriginStandIn: built here from this project (harness/dockertarget/standin
	// and .ci/docker-sandbox-rootfs.sh), not OpenSandbox's.
	OriginStandIn = "stand-in"
)

// Image labels the docker target reads to tell an image's provenance.
const (
	// LabelUpstreamCommit names the upstream commit an image was built from.
	LabelUpstreamCommit = "org.osb-acceptance.upstream-commit"
	// LabelUpstreamComponent names the component (execd, egress).
	LabelUpstreamComponent = "org.osb-acceptance.upstream-component"
)

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// VersionTableMarkdown renders Pairings for the docs.
func VersionTableMarkdown() string {
	var b strings.Builder
	b.WriteString("| opensandbox-server | execd image | egress image | note |\n|---|---|---|---|\n")
	code := func(s string) string {
		if s == "" {
			return "none"
		}
		return "`" + s + "`"
	}
	for _, p := range Pairings {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", p.Server, code(p.Execd), code(p.Egress), p.Note)
	}
	return b.String()
}
