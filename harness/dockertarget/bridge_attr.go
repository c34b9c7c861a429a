package dockertarget

import (
	"net"
	"net/http"

	"github.com/ory/dockertest/v3"
	dc "github.com/ory/dockertest/v3/docker"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// The bridge front names the sandbox each request came from, as the bundled
// server's egress gateway does (wire.EgressSandboxHeader), so a stub's log
// says which sandbox called it (stubs.Request.EgressSandbox): the
// exfiltration sink's request is then the run's own by identity, never by
// when it came. The name is the engine's: the sandbox whose container (or
// egress sidecar, whose network namespace a sandbox with a policy shares)
// holds the request's source address on the bridge. A sandbox cannot set it:
// the front drops the header a request carries before naming its own.

// attributed wraps the front's handler: the incoming EgressSandboxHeader is
// dropped, and set to the sandbox attribute names for the request's peer
// address (none when attribute is nil or names none).
func attributed(attribute func(net.IP) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(wire.EgressSandboxHeader)
		if attribute != nil {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if ip := net.ParseIP(host); err == nil && ip != nil {
				if id := attribute(ip); id != "" {
					r.Header.Set(wire.EgressSandboxHeader, id)
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// sandboxAtAddr names the sandbox whose running container on the engine
// holds ip: a sandbox container (label opensandbox.io/id) or an egress
// sidecar (opensandbox.io/egress-sidecar-for). "" when none does or the
// engine cannot say. Asked per request, while the sender's container runs.
func sandboxAtAddr(pool *dockertest.Pool) func(net.IP) string {
	return func(ip net.IP) string {
		list, err := pool.Client.ListContainers(dc.ListContainersOptions{})
		if err != nil {
			return ""
		}
		return sandboxHolding(list, ip)
	}
}

// sandboxHolding is the sandbox id of the container in list holding ip.
func sandboxHolding(list []dc.APIContainers, ip net.IP) string {
	for _, c := range list {
		id := c.Labels[labelSidecarOf]
		if id == "" {
			id = c.Labels[labelSandboxID]
		}
		if id == "" {
			continue
		}
		for _, n := range c.Networks.Networks {
			if a := net.ParseIP(n.IPAddress); a != nil && a.Equal(ip) {
				return id
			}
		}
	}
	return ""
}
