package agent

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/internal/answerfirst"
)

// TestProxyForwardsToAServerThatAnswersFirst: /proxy/{port} forwards in full
// duplex. A port's server that starts its answer before it has the whole
// request body gets the whole body, and the client the whole answer (without
// full duplex the exchange hangs here: Go's server reads the rest of the body
// before it writes the answer's header, and the client sends it only once
// the answer has started).
func TestProxyForwardsToAServerThatAnswersFirst(t *testing.T) {
	_, srv, _ := testAgent(t)
	up := httptest.NewServer(answerfirst.Handler())
	defer func() { up.CloseClientConnections(); up.Close() }()
	_, port, _ := net.SplitHostPort(up.Listener.Addr().String())

	c, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = fmt.Fprintf(c, "POST /proxy/%s/x HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n{\"a\":", port)
	require.NoError(t, err)
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "the answer starts before the body is whole")
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	first, err := rd.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, answerfirst.Started[:len(first)], first)
	_, err = fmt.Fprint(c, "\"bcd\"}")
	require.NoError(t, err)
	rest, err := io.ReadAll(rd)
	require.NoError(t, err, "the answer is whole")
	assert.Equal(t, answerfirst.Started[len(first):]+answerfirst.Got(`{"a":"bcd"}`), string(rest))
}
