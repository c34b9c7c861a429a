package standin

import (
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/osb-capstone/acceptance/mock-server/egress"
)

// dnsDecision answers one question without an upstream: NXDOMAIN when the
// current policy denies the name (as the real sidecar, CONTRACT §3.4),
// SERVFAIL when it allows it — the real sidecar forwards allowed names
// upstream and answers SERVFAIL when the upstream fails (dnsHandler asks
// the upstream first, upstream.go).
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
	// upstream answers the names the policy allows (none: SERVFAIL).
	upstream upstreamDNS
	// mem, when set, is the credential proxy's: an allowed name's A answer
	// is rewritten to the interceptor on 127.0.0.1 (upstream.go).
	mem *resolved
}

func (h dnsHandler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	if len(req.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	name := strings.TrimSuffix(strings.ToLower(req.Question[0].Name), ".")
	m.Rcode = dnsDecision(h.policy(), req.Question[0].Name)
	if m.Rcode != dns.RcodeServerFailure { // denied: NXDOMAIN
		_ = w.WriteMsg(m)
		return
	}
	resp, err := h.upstream.exchange(req)
	if err != nil {
		if h.outbound != nil {
			h.outbound(name, "no upstream resolver answered: "+err.Error()+" (SERVFAIL)")
		}
		_ = w.WriteMsg(m)
		return
	}
	if h.outbound != nil {
		h.outbound(name, "")
	}
	if h.mem != nil {
		resp = interceptAnswer(resp, name, h.mem)
	}
	resp.Id = req.Id
	_ = w.WriteMsg(resp)
}

// serveDNS answers on addr over UDP and TCP; the returned func stops both.
func serveDNS(addr string, h dnsHandler) (func(), error) {
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
