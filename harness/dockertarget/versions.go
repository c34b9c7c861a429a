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

// Pairings is the pinned version table, read from each wheel on PyPI
// (2026-12-01). TestPairingsTable keeps it well-formed; docs/docker.md shows it.
var Pairings = []Pairing{
	{Server: "1.1.1", Execd: "opensandbox/execd:v1.1.0", Egress: "opensandbox/egress:v1.1.7"},
	{Server: "1.1.0", Execd: "opensandbox/execd:v1.1.0", Egress: "opensandbox/egress:v1.1.7",
		Note: "the published package fails at start-up (ModuleNotFoundError: opensandbox_server.services.fast_sandbox.generated): an upstream packaging defect"},
	{Server: "0.2.3", Execd: "opensandbox/execd:v1.0.22", Egress: "opensandbox/egress:v1.1.7"},
	{Server: "0.2.2", Execd: "opensandbox/execd:v1.0.21", Egress: "opensandbox/egress:v1.1.4"},
	{Server: "0.2.1", Execd: "opensandbox/execd:v1.0.20", Egress: "opensandbox/egress:v1.1.3"},
	{Server: "0.2.0", Execd: "opensandbox/execd:v1.0.19", Egress: "opensandbox/egress:v1.1.0"},
}

// PairingFor returns the table's row for a server version; ok is false for a
// version the table does not know (its components are then the stand-ins
// unless overridden, and the report says the pairing is unknown).
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
	// OriginOfficial: pulled from its registry in this run by the name the
	// server version gives (the registry vouches for it).
	OriginOfficial = "official"
	// OriginEngine: present in the engine already, not built here; its
	// origin cannot be verified offline.
	OriginEngine = "from the engine"
	// OriginUpstreamPrefix starts "upstream-built from commit X": built from
	// an upstream OpenSandbox checkout with upstream's own build definitions,
	// labelled LabelUpstreamCommit=X.
	OriginUpstreamPrefix = "upstream-built from commit "
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

// originFromLabels is an engine image's provenance from its labels: a
// stand-in or upstream-built image says so; anything else was not built here.
func originFromLabels(labels map[string]string, pulledNow bool) string {
	if labels[labelStandIn] != "" {
		return OriginStandIn
	}
	if c := strings.TrimSpace(labels[LabelUpstreamCommit]); c != "" {
		return OriginUpstreamPrefix + shortCommit(c)
	}
	if pulledNow {
		return OriginOfficial
	}
	return OriginEngine
}

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
	for _, p := range Pairings {
		fmt.Fprintf(&b, "| %s | `%s` | `%s` | %s |\n", p.Server, p.Execd, p.Egress, p.Note)
	}
	return b.String()
}
