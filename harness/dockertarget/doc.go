// Package dockertarget stands up a real OpenSandbox to grade against
// (`acceptance run --target docker`): the control plane
// opensandbox-server==<version> from PyPI in a venv (pinned with hashes), on
// the project's own Docker engine (.ci/docker-engine.sh: a dedicated bridge,
// no forwarding, no NAT), with images built locally because no container
// registry is reachable here: the sandbox image from Debian packages, and
// STAND-INS for the execd and egress images (package standin). The Docker
// side goes through dockertest/v3 (pool, images, containers, cleanup).
//
// Files: engine.go (connect, lock), images.go (build and cache images),
// server.go (venv, config, process), reap.go (leftovers by label),
// target.go (Start/Close, the component list for the report), bridge.go
// and bridge_tls.go (the stubs offered to sandboxes on the engine's bridge:
// resolver, plain-HTTP front, TLS front), stubca.go (the machine's stub CA
// the sandbox image trusts for the TLS front).
package dockertarget
