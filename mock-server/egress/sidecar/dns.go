package sidecar

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// answerTTL is short so that runtime policy changes show up quickly; the
// gateway re-checks every connection anyway.
const answerTTL = 5

// dnsHandler answers from the gateway's decision: allowed A → 127.0.0.1
// (where the relays listen), allowed AAAA/other → empty NOERROR, denied →
// NXDOMAIN (never REFUSED), gateway unreachable → SERVFAIL.
type dnsHandler struct {
	gw *client
}

func (h *dnsHandler) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	if len(req.Question) == 0 || req.Opcode != dns.OpcodeQuery {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	for _, q := range req.Question {
		name := strings.TrimSuffix(q.Name, ".")
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		rr, err := h.gw.resolve(ctx, name, dns.TypeToString[q.Qtype])
		cancel()
		if err != nil {
			m.Rcode = dns.RcodeServerFailure
			m.Answer = nil
			break
		}
		if !rr.Allowed {
			m.Rcode = dns.RcodeNameError
			m.Answer = nil
			break
		}
		if q.Qtype == dns.TypeA || q.Qtype == dns.TypeANY {
			m.Answer = append(m.Answer, &dns.A{
				Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: answerTTL},
				A:   net.IPv4(127, 0, 0, 1).To4(),
			})
		}
	}
	_ = w.WriteMsg(m)
}

// startDNS binds UDP and TCP on the same address (TCP takes the port UDP
// got, so ":0" works in tests).
func startDNS(addr string, h dns.Handler) (udp, tcp *dns.Server, bound string, err error) {
	var pc net.PacketConn
	var ln net.Listener
	// With port 0 the TCP side may find the UDP port taken; retry a few times.
	for attempt := 0; ; attempt++ {
		pc, err = net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, "", err
		}
		bound = pc.LocalAddr().String()
		ln, err = net.Listen("tcp", bound)
		if err == nil {
			break
		}
		_ = pc.Close()
		if _, port, _ := net.SplitHostPort(addr); port != "0" || attempt >= 20 {
			return nil, nil, "", err
		}
	}
	started := make(chan struct{}, 2)
	notify := func() { started <- struct{}{} }
	udp = &dns.Server{PacketConn: pc, Handler: h, NotifyStartedFunc: notify}
	tcp = &dns.Server{Listener: ln, Handler: h, NotifyStartedFunc: notify}
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	<-started // so that Shutdown never races a server that has not started
	<-started
	return udp, tcp, bound, nil
}
