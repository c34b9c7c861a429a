package fullduplex

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/internal/answerfirst"
)

// syncBuffer is a log the server writes from its connections' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// forwarder is a reverse proxy to up, in full duplex: with Enable, or (bare)
// with EnableFullDuplex alone. Its server's log is returned.
func forwarder(t *testing.T, up string, bare bool) (*httptest.Server, *syncBuffer) {
	u, err := url.Parse(up)
	require.NoError(t, err)
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) { pr.SetURL(u) }, FlushInterval: -1, ErrorLog: log.New(io.Discard, "", 0)}
	logs := &syncBuffer{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if bare {
			_ = http.NewResponseController(w).EnableFullDuplex()
		} else {
			defer Enable(w, r)()
		}
		rp.ServeHTTP(w, r)
	}))
	srv.Config.ErrorLog = log.New(logs, "", 0)
	srv.Start()
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv, logs
}

// TestForwardingAnUnreadBodyKeepsTheConnection: requests whose body nobody
// reads, on one keep-alive connection, through a forwarder in full duplex:
// to an upstream that answers without reading the body, and to one that is
// down (the proxy answers 502 without reading it). With Enable every request
// is answered and the server logs nothing. With EnableFullDuplex alone, the
// server drains the unread body after the handler and panics on its next
// read of the connection (golang/go#68560): the control half of the test,
// which proves the first half would see the fault.
func TestForwardingAnUnreadBodyKeepsTheConnection(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "answered unread")
	}))
	t.Cleanup(func() { up.CloseClientConnections(); up.Close() })
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close() // nothing listens there any more
	run := func(upstream string, bare bool) (failed int, logs string) {
		srv, l := forwarder(t, upstream, bare)
		client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
		defer client.CloseIdleConnections()
		for i := 0; i < 20; i++ {
			res, err := client.Post(srv.URL+"/x", "application/json", strings.NewReader(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("p", 2000))))
			if err != nil {
				failed++
				continue
			}
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusBadGateway {
				failed++
			}
		}
		return failed, l.String()
	}
	for name, upstream := range map[string]string{"answers unread": up.URL, "down": downURL} {
		failed, logs := run(upstream, false)
		assert.Zero(t, failed, "%s: every request answered through Enable", name)
		assert.NotContains(t, logs, "panic", "%s: the server never panicked", name)
	}
	failed, logs := run(downURL, true)
	assert.Contains(t, logs, "invalid concurrent Body.Read call", "control: EnableFullDuplex alone panics (%d failed)", failed)
}

// TestForwardingToAnUpstreamThatAnswersFirst: through a forwarder with
// Enable, an upstream that starts its answer before it has the whole body
// gets the whole body, and the client the whole answer.
func TestForwardingToAnUpstreamThatAnswersFirst(t *testing.T) {
	up := httptest.NewServer(answerfirst.Handler())
	t.Cleanup(func() { up.CloseClientConnections(); up.Close() })
	srv, logs := forwarder(t, up.URL, false)
	got, err := answerfirst.Exchange(srv.Listener.Addr().String(), "/x", "")
	require.NoError(t, err)
	assert.Equal(t, answerfirst.Started+answerfirst.Got(answerfirst.Body), got)
	assert.NotContains(t, logs.String(), "panic")
}
