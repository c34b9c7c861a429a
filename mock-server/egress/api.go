// Package egress enforces a sandbox's networkPolicy at the network layer and
// hosts the credential vault, as OpenSandbox 1.1.1's egress sidecar does
// (CONTRACT §3). The authoritative decision is made host-side by the Hub's
// per-sandbox gateway; the in-sandbox sidecar (package egress/sidecar, run by
// the agent) only answers DNS and relays connections to that gateway over a
// unix socket. The gateway dials only configured upstreams (hostname →
// loopback stub), so nothing leaves the machine. A sandbox without a network
// namespace (the bundled server's insecure mode) gets the gateway as an HTTP
// proxy on the host's loopback instead (Attachment.LoopbackProxy): enforced
// then only for clients that honour HTTP(S)_PROXY.
package egress
