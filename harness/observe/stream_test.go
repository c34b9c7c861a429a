package observe

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/internal/answerfirst"
)

// streamingServer answers the server proxy route with a command's output as
// server-sent events, one every 50 ms (ten in all); /sandboxes/cut/… breaks
// off after two events (the connection closed mid-body); a DELETE is 204.
// conns counts the connections the proxy opened to it.
func streamingServer(t *testing.T, conns *atomic.Int64) *httptest.Server {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 0; i < 10; i++ {
			if strings.HasPrefix(r.URL.Path, "/sandboxes/cut/") && i == 2 {
				c, _, err := http.NewResponseController(w).Hijack()
				if err == nil {
					_ = c.Close()
				}
				return
			}
			fmt.Fprintf(w, "data: {\"n\":%d}\n\n", i)
			_ = http.NewResponseController(w).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestStreamSurvivesAClientHalfClose: a command's output streams through the
// proxy to the end although the client half-closed its side once it had sent
// the request, as a TCP relay in front of the proxy (the confinement's
// forwarder) does. Go's server cancels a request's context when the client's
// connection reads EOF; the proxy forwarded under that context, so the
// stream was cut mid-body ("incomplete chunked read" in the subject, "use of
// closed network connection" in the proxy: seen on the docker target).
func TestStreamSurvivesAClientHalfClose(t *testing.T) {
	var conns atomic.Int64
	up := streamingServer(t, &conns)
	p, err := Start(up.URL)
	require.NoError(t, err)
	defer p.Close()

	c, err := net.Dial("tcp", p.Domain())
	require.NoError(t, err)
	defer c.Close()
	body := `{"command":"pip install tabulate"}`
	fmt.Fprintf(c, "POST /sandboxes/sb-1/proxy/44772/command HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	sc := bufio.NewScanner(res.Body)
	n := 0
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") {
			n++
		}
	}
	require.NoError(t, sc.Err(), "the stream ended cleanly")
	assert.Equal(t, 10, n, "every event arrived")
}

// TestAbortedStreamIsRecorded: a stream the server breaks off mid-body is
// still recorded (the reverse proxy aborts the handler with a panic; the
// record is written on the way out), with its sandbox id and the 200 the
// client was sent.
func TestAbortedStreamIsRecorded(t *testing.T) {
	var conns atomic.Int64
	up := streamingServer(t, &conns)
	p, err := Start(up.URL)
	require.NoError(t, err)
	defer p.Close()
	res, err := http.Post("http://"+p.Domain()+"/sandboxes/cut/proxy/44772/command", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	b, rerr := io.ReadAll(res.Body)
	res.Body.Close()
	assert.ErrorIs(t, rerr, io.ErrUnexpectedEOF, "the client sees the stream break off, not a clean end (read %q)", b)
	calls := p.EndpointCalls()
	require.Len(t, calls, 1, "the broken exchange is on record")
	assert.Equal(t, "cut", calls[0].SandboxID)
	assert.Equal(t, http.StatusOK, calls[0].Status)
	assert.False(t, calls[0].Ended.IsZero())
}

// TestProxyOpensAFreshUpstreamConnectionPerRequest: no kept-alive upstream
// connection is reused, so a server that closes idle connections (uvicorn
// after 5 s) never races a forwarded POST or DELETE into a 502, and a
// published port a later sandbox reuses is dialled afresh.
func TestProxyOpensAFreshUpstreamConnectionPerRequest(t *testing.T) {
	var conns atomic.Int64
	up := streamingServer(t, &conns)
	p, err := Start(up.URL)
	require.NoError(t, err)
	defer p.Close()
	for i := 0; i < 3; i++ {
		req, err := http.NewRequest(http.MethodDelete, "http://"+p.Domain()+"/v1/sandboxes/sb-1", nil)
		require.NoError(t, err)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusNoContent, res.StatusCode)
	}
	assert.Equal(t, int64(3), conns.Load(), "one upstream connection per request")
}

// TestRequestBodyReachesAServerThatAnswersFirst: the proxy forwards in full
// duplex (internal/fullduplex). A server that starts its answer before it has
// read the whole request body (execd streams a command's output as soon as it
// can) gets the whole body, and the client the whole answer: without it the
// answer was cut mid-command on the docker target ("incomplete chunked read"
// / "use of closed network connection"), and this exchange hangs.
func TestRequestBodyReachesAServerThatAnswersFirst(t *testing.T) {
	up := httptest.NewServer(answerfirst.Handler())
	defer func() { up.CloseClientConnections(); up.Close() }()
	p, err := Start(up.URL)
	require.NoError(t, err)
	defer p.Close()

	got, err := answerfirst.Exchange(p.Domain(), "/sandboxes/sb-1/proxy/44772/command", "")
	require.NoError(t, err)
	assert.Equal(t, answerfirst.Started+answerfirst.Got(answerfirst.Body), got)
}
