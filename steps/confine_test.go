package steps

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRefuseAdmin(t *testing.T) {
	for _, p := range []string{"/_mock/canaries", "/%5Fmock/canaries", "//_MOCK/info", "/x/../_mock/audit"} {
		assert.NotEmpty(t, refuseAdmin(httptest.NewRequest("PUT", "http://127.0.0.1:1"+p, nil)), p)
	}
	for _, p := range []string{"/v1/sandboxes", "/v1/sandboxes/abc/endpoints/44772", "/health"} {
		assert.Empty(t, refuseAdmin(httptest.NewRequest("GET", "http://127.0.0.1:1"+p, nil)), p)
	}
}

func TestLoopbackPort(t *testing.T) {
	for in, want := range map[string]int{
		"127.0.0.1:8080": 8080, "http://localhost:9/v1": 9, "http://127.0.0.1:41685/proxy/44772": 41685,
		"127.0.0.1:41685/proxy/44772": 41685, "http://data-api.capstone.test/v1/x": 0, "10.0.0.1:80": 0, "": 0,
	} {
		assert.Equal(t, want, loopbackPort(in), in)
	}
}
