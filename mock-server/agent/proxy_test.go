package agent

import (
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/internal/answerfirst"
)

// TestProxyForwardsToAServerThatAnswersFirst: /proxy/{port} forwards in full
// duplex (internal/fullduplex). A port's server that starts its answer before
// it has the whole request body gets the whole body, and the client the whole
// answer (without full duplex the exchange hangs here: Go's server reads the
// rest of the body before it writes the answer's header, and the client sends
// it only once the answer has started).
func TestProxyForwardsToAServerThatAnswersFirst(t *testing.T) {
	_, srv, _ := testAgent(t)
	up := httptest.NewServer(answerfirst.Handler())
	defer func() { up.CloseClientConnections(); up.Close() }()
	_, port, err := net.SplitHostPort(up.Listener.Addr().String())
	require.NoError(t, err)
	got, err := answerfirst.Exchange(strings.TrimPrefix(srv.URL, "http://"), "/proxy/"+port+"/x", "")
	require.NoError(t, err)
	assert.Equal(t, answerfirst.Started+answerfirst.Got(answerfirst.Body), got)
}
