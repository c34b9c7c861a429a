package standin

import (
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/osb-capstone/acceptance/mock-server/egress"
)

// dnsDecision answers one question: NXDOMAIN when the current policy denies
// the name (as the real sidecar, CONTRACT §3.4), SERVFAIL when it allows it
// — the real sidecar forwards allowed names upstream and answers SERVFAIL
// when the upstream fails, and this machine has no upstream.
func dnsDecision(p egress.Policy, name string) int {
	if !p.Evaluate(name).Allowed {
		return dns.RcodeNameError
	}
	return dns.RcodeServerFailure
}

type dnsHandler struct {
	policy func() egress.Policy
	// outbound logs a lookup the policy allowed, as the real sidecar does
	// (nil: not logged).
	outbound func(host, errText string)
}

func (h dnsHandler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
	} else {
		m.Rcode = dnsDecision(h.policy(), req.Question[0].Name)
		if m.Rcode == dns.RcodeServerFailure && h.outbound != nil {
			h.outbound(strings.TrimSuffix(strings.ToLower(req.Question[0].Name), "."), "no upstream resolver: this machine has none (SERVFAIL)")
		}
	}
	_ = w.WriteMsg(m)
}

// serveDNS answers on addr over UDP and TCP; the returned func stops both.
func serveDNS(addr string, policy func() egress.Policy, outbound func(host, errText string)) (func(), error) {
	h := dnsHandler{policy: policy, outbound: outbound}
	udp := &dns.Server{Addr: addr, Net: "udp", Handler: h}
	tcp := &dns.Server{Addr: addr, Net: "tcp", Handler: h}
	errs := make(chan error, 2)
	started := make(chan struct{}, 2)
	udp.NotifyStartedFunc = func() { started <- struct{}{} }
	tcp.NotifyStartedFunc = func() { started <- struct{}{} }
	go func() { errs <- udp.ListenAndServe() }()
	go func() { errs <- tcp.ListenAndServe() }()
	stop := func() { _ = udp.Shutdown(); _ = tcp.Shutdown() }
	for i := 0; i < 2; i++ {
		select {
		case <-started:
		case err := <-errs:
			stop()
			return nil, err
		case <-time.After(5 * time.Second):
			stop()
			return nil, fmt.Errorf("dns on %s did not start", addr)
		}
	}
	return stop, nil
}
