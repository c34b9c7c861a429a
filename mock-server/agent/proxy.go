package agent

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/internal/fullduplex"
)

var proxyTransport = &http.Transport{
	DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
	MaxIdleConnsPerHost: 16,
	IdleConnTimeout:     60 * time.Second,
}

// handleProxy forwards /proxy/{port}/{path} to http://127.0.0.1:{port}/{path}
// (query kept, flushed every 200 ms, WebSocket upgrades passed through).
func (a *Agent) handleProxy(w http.ResponseWriter, r *http.Request) {
	port, err := strconv.Atoi(r.PathValue("port"))
	if err != nil || port < 1 || port > 65535 {
		writeError(w, http.StatusBadRequest, "INVALID_REQUEST_BODY", "invalid port "+strconv.Quote(r.PathValue("port")))
		return
	}
	prefix := "/proxy/" + r.PathValue("port")
	rest := strings.TrimPrefix(r.URL.Path, prefix)
	if rest == "" {
		rest = "/"
	}
	target := &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = target.Scheme
			pr.Out.URL.Host = target.Host
			pr.Out.URL.Path = rest
			pr.Out.URL.RawPath = ""
			pr.Out.URL.RawQuery = pr.In.URL.RawQuery
			pr.Out.Host = pr.In.Host
		},
		Transport:     proxyTransport,
		FlushInterval: 200 * time.Millisecond,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("Bad Gateway"))
		},
	}
	// Full duplex (internal/fullduplex): the port's server may answer
	// before it has the whole request body.
	defer fullduplex.Enable(w, r)()
	rp.ServeHTTP(w, r)
}
