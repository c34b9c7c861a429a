package mockserver

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/internal/answerfirst"
)

// TestServerProxyForwardsToABackendThatAnswersFirst: the server proxy route
// and the execd endpoint forward in full duplex (internal/fullduplex). A
// backend that starts its answer before it has read the whole request body
// (execd streams a command's output as soon as it can) gets the whole body,
// and the client the whole answer. Without full duplex the exchange hangs
// here: Go's server reads the rest of the body before it writes the answer's
// header, and the client sends it only once the answer has started.
func TestServerProxyForwardsToABackendThatAnswersFirst(t *testing.T) {
	e := newEnv(t)
	id := e.create(nil)
	for _, prefix := range []string{"", "/v1"} {
		got, err := answerfirst.Exchange(strings.TrimPrefix(e.srv.URL(), "http://"),
			prefix+"/sandboxes/"+id+"/proxy/9000/answer-first", headerAPIKey+": "+testKey+"\r\n")
		require.NoError(t, err, prefix)
		assert.Equal(t, answerfirst.Started+answerfirst.Got(answerfirst.Body), got, prefix)
	}
}
