package egress

import (
	"fmt"
	"io"
	"testing"
)

func BenchmarkPolicyEvaluate(b *testing.B) {
	p := Policy{DefaultAction: "deny"}
	for i := 0; i < DefaultMaxRules-1; i++ {
		p.Egress = append(p.Egress, Rule{Action: "allow", Target: fmt.Sprintf("*.host%d.test", i)})
	}
	p.Egress = append(p.Egress, Rule{Action: "allow", Target: "pypi.org"})
	p, err := p.Normalize()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !p.Evaluate("pypi.org").Allowed {
			b.Fatal("want allowed")
		}
	}
}

// BenchmarkRelayHTTP measures one keep-alive request through the sidecar's
// port-80 relay, the gateway and a loopback stub.
func BenchmarkRelayHTTP(b *testing.B) {
	e := newEnv(b, envOpts{policy: pypiPolicy, stubs: []string{"pypi.org"}})
	c := e.relayClient()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := c.Get("http://pypi.org/simple/")
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
