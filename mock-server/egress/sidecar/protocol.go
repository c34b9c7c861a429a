package sidecar

// The gateway protocol: HTTP/1.1 over the unix socket the host mounts at
// /run/osb/gateway.sock. The host-side gateway (package egress) decides
// everything; the sidecar only asks.
//
//	GET /resolve?name=<host>&type=<A|AAAA|…>  → 200 application/json ResolveResult
//	CONNECT <host>:<port> HTTP/1.1            → 200, then the connection is a raw tunnel
//	  (header X-Osb-Phase: connect | proxy)     that the gateway serves as HTTP or TLS+HTTP
//	                                            (sniffed) towards the mapped upstream;
//	                                            otherwise 403 (denied) / 502 (no upstream)
//	                                            / 400 with a text/plain reason
//	GET /healthz                              → 200 ok
const (
	// PhaseHeader tells the gateway how the sandbox reached it: "connect"
	// (transparent relay on :80/:443) or "proxy" (the HTTP proxy on :3128).
	PhaseHeader = "X-Osb-Phase"
	// DecisionHeader carries the gateway's decision (deny | error) on refusal.
	DecisionHeader = "X-Osb-Decision"
)

// ResolveResult is the gateway's answer to /resolve.
type ResolveResult struct {
	Name     string `json:"name"`
	Allowed  bool   `json:"allowed"`
	Decision string `json:"decision"` // allow | deny
	Rule     string `json:"rule"`
}
