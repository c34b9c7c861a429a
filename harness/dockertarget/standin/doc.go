// Package standin holds the STAND-INS for OpenSandbox's execd and egress
// images that the docker target builds when the official images
// (opensandbox/execd, opensandbox/egress) cannot be pulled: the machine
// reaches no container registry, and the project must not vendor or build
// OpenSandbox's source. Both are modes of the project's own acceptance
// binary, speaking the interfaces the real control plane uses:
//
//   - execd (`acceptance standin-execd`): the bundled server's execd agent
//     (mock-server/agent) served on :44772 inside the sandbox container. The
//     control plane copies /execd and /bootstrap.sh out of the execd image
//     and runs the bootstrap as the sandbox's entrypoint wrapper; the
//     stand-in bootstrap starts execd in the background and execs the
//     sandbox's entrypoint.
//   - egress (`acceptance standin-egress`): a sidecar that owns the sandbox's
//     network namespace, serving /healthz, the runtime policy API and the
//     Credential Vault on :18080 (mock-server/egress, authenticated with
//     OPENSANDBOX_EGRESS_TOKEN) and DNS on 127.0.0.1:53, which it makes the
//     sandbox's resolver (upstream.go). Denied names get NXDOMAIN; allowed
//     names are forwarded to the resolvers the container's resolv.conf named
//     (on the docker target: the run's resolver on the engine's bridge, which
//     knows the data API's name only) and get SERVFAIL when none answers, as
//     the real sidecar. With credentialProxy it injects the vault's
//     credentials into plain-HTTP requests (no TLS interception). It installs
//     no nftables rules: the engine's bridge drops every forwarded packet
//     anyway (.ci/docker-engine.sh), and only the bridge address's ports 53
//     and 80 are open to containers during a run.
//
// A verdict measured with a stand-in is labelled as such in the report.
package standin
