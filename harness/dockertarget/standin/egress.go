package standin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/egress"
)

// Environment the control plane gives the egress sidecar (CONTRACT §3.1).
const (
	envRules     = "OPENSANDBOX_EGRESS_RULES"
	envToken     = "OPENSANDBOX_EGRESS_TOKEN"
	envSandboxID = "OPENSANDBOX_EGRESS_SANDBOX_ID"
	envMITM      = "OPENSANDBOX_EGRESS_MITMPROXY_TRANSPARENT"
	envAPIAddr   = "OPENSANDBOX_EGRESS_HTTP_ADDR"
	authHeader   = "OPENSANDBOX-EGRESS-AUTH"
)

// EgressMain runs the egress stand-in until SIGTERM/SIGINT.
func EgressMain(args []string) int {
	pol, err := egress.ParsePolicy([]byte(os.Getenv(envRules)))
	if err != nil {
		logf("egress: %s: %v", envRules, err)
		return 2
	}
	state, err := os.MkdirTemp("", "osb-egress-")
	if err != nil {
		logf("egress: %v", err)
		return 1
	}
	defer os.RemoveAll(state)
	// No upstreams: nothing is ever dialled from here.
	hub, err := egress.NewHub(egress.HubConfig{StateDir: state})
	if err != nil {
		logf("egress: %v", err)
		return 1
	}
	defer hub.Close()
	id := os.Getenv(envSandboxID)
	if id == "" {
		id = "sandbox"
	}
	att, err := hub.Attach(id, pol, os.Getenv(envMITM) == "true")
	if err != nil {
		logf("egress: %v", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	// The upstream resolvers of resolv.conf, which then names the stand-in
	// (upstream.go): taken before anything answers, so the sandbox, which
	// starts once this sidecar is healthy, asks the stand-in.
	ups, err := takeOverResolvConf(resolvConf)
	if err != nil {
		logf("egress: %s: %v (upstreams %v)", resolvConf, err, ups)
	}
	h := dnsHandler{policy: att.Policy, outbound: func(host, errText string) { logOutbound(os.Stdout, id, host, errText) },
		upstream: upstreamDNS{servers: ups, timeout: 2 * time.Second}}
	if os.Getenv(envMITM) == "true" {
		h.mem = &resolved{}
		il, err := net.Listen("tcp4", "127.0.0.1:80")
		if err != nil {
			logf("egress: credential proxy: %v", err)
			return 1
		}
		isrv := &http.Server{Handler: interceptor{att: att, mem: h.mem}, ReadHeaderTimeout: 30 * time.Second}
		go func() { _ = isrv.Serve(il) }()
		defer isrv.Close()
		// Port 443: a relay by server name to the address the upstream
		// gave (tlspass.go); the allowed names answer 127.0.0.1 for HTTPS too.
		tl, err := net.Listen("tcp4", "127.0.0.1:443")
		if err != nil {
			logf("egress: credential proxy: %v", err)
			return 1
		}
		defer tl.Close()
		go tlsPassthrough{att: att, mem: h.mem}.serve(tl)
	}
	dnsStop, err := serveDNS("127.0.0.1:53", h)
	if err != nil {
		logf("egress: dns: %v", err)
		return 1
	}
	defer dnsStop()

	addr := os.Getenv(envAPIAddr)
	if addr == "" {
		addr = ":18080"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logf("egress: %v", err)
		return 1
	}
	srv := &http.Server{Handler: tokenAuth(os.Getenv(envToken), att.Token(), att.Handler()), ReadHeaderTimeout: 30 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	logf("egress stand-in: API on %s, DNS on 127.0.0.1:53 (upstreams %v), credential proxy %v (plain HTTP on 127.0.0.1:80, TLS relayed by server name on 127.0.0.1:443), policy mode %s",
		ln.Addr(), ups, h.mem != nil, pol.Mode())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logf("egress: %v", err)
		return 1
	}
	return 0
}

// tokenAuth checks the control plane's per-sandbox token (401 text
// "unauthorized", as the real sidecar) and hands the request on with the
// inner attachment's own token.
func tokenAuth(want, inner string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if want != "" {
			got := r.Header.Get(authHeader)
			if len(got) != len(want) || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		r.Header.Set(authHeader, inner)
		next.ServeHTTP(w, r)
	})
}

// logOutbound writes one lookup the policy allowed as the real sidecar logs
// it (CONTRACT §3.4: a JSON line with opensandbox.event egress.outbound and
// target.host, plus error when the lookup failed). Denials are not logged,
// as there.
func logOutbound(w io.Writer, sandboxID, host, errText string) {
	line := map[string]any{"level": "info", "ts": time.Now().UTC().Format(time.RFC3339Nano), "logger": "opensandbox.egress",
		"msg": "egress outbound", "sandbox_id": sandboxID, "opensandbox.event": "egress.outbound", "target.host": host}
	if errText != "" {
		line["error"] = errText
	}
	b, _ := json.Marshal(line)
	_, _ = w.Write(append(b, '\n'))
}
