package mockserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/internal/answerfirst"
)

// TestServerProxyForwardsToABackendThatAnswersFirst: the server proxy route
// and the execd endpoint forward in full duplex. A backend that starts its
// answer before it has read the whole request body (execd streams a
// command's output as soon as it can) gets the whole body, and the client
// the whole answer. Without full duplex, Go's HTTP/1 server, on writing the
// answer's header, first reads what is left of the body and closes it: here
// the client sends the rest only once the answer has started, so the
// exchange hangs; when the body is whole already, that close races the
// transport still sending the body on, which then closes the backend
// connection and cuts the streaming answer ("use of closed network
// connection") — a command's output lost on a loaded machine.
func TestServerProxyForwardsToABackendThatAnswersFirst(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	for _, prefix := range []string{"", "/v1"} {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.srv.URL(), "http://"))
		require.NoError(t, err)
		require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
		_, err = fmt.Fprintf(c, "POST %s/sandboxes/%s/proxy/9000/answer-first HTTP/1.1\r\nHost: x\r\n%s: %s\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":", prefix, id, headerAPIKey, testKey)
		require.NoError(t, err)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err, "%s: the answer starts before the body is whole", prefix)
		rd := bufio.NewReader(res.Body)
		first, err := rd.ReadString('\n')
		require.NoError(t, err, "%s: the answer's first line arrives before the body is whole", prefix)
		assert.Equal(t, answerfirst.Started[:len(first)], first)
		time.Sleep(100 * time.Millisecond)
		_, err = fmt.Fprint(c, "\"bcd\"}")
		require.NoError(t, err)
		rest, err := io.ReadAll(rd)
		require.NoError(t, err, "%s: the answer is whole", prefix)
		assert.Equal(t, answerfirst.Started[len(first):]+answerfirst.Got(`{"a":"bcd"}`), string(rest), prefix)
		_ = res.Body.Close()
		_ = c.Close()
	}
}
