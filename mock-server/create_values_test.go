package mockserver

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCreateClientMistakesAre400: values no container could start with are
// client mistakes (400 SANDBOX::INVALID_PARAMETER with a message naming the
// field), never a 500, and no message shows a host path.
func TestCreateClientMistakesAre400(t *testing.T) {
	e := newEnv(t)
	for name, mut := range map[string]func(map[string]any){
		"env name with =":     func(m map[string]any) { m["env"] = map[string]any{"A=B": "1"} },
		"empty env name":      func(m map[string]any) { m["env"] = map[string]any{"": "1"} },
		"NUL in env value":    func(m map[string]any) { m["env"] = map[string]any{"A": "x\x00y"} },
		"NUL in entrypoint":   func(m map[string]any) { m["entrypoint"] = []string{"sh", "-c", "echo\x00hi"} },
		"cpu 1e9":             func(m map[string]any) { m["resourceLimits"] = map[string]string{"cpu": "1e9", "memory": "512Mi"} },
		"memory of one byte":  func(m map[string]any) { m["resourceLimits"] = map[string]string{"cpu": "500m", "memory": "1"} },
		"memory of 5 MiB":     func(m map[string]any) { m["resourceLimits"] = map[string]string{"memory": "5Mi"} },
		"cpu 100000 (cores)":  func(m map[string]any) { m["resourceLimits"] = map[string]string{"cpu": "100000"} },
		"NUL in env name too": func(m map[string]any) { m["env"] = map[string]any{"A\x00": "1"} },
	} {
		body := validCreate()
		mut(body)
		r := e.call("POST", "/v1/sandboxes", body, nil)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s: %s", name, r.Body)
		m := r.JSON(t)
		assert.Equal(t, "SANDBOX::INVALID_PARAMETER", m["code"], name)
		assert.NotContains(t, m["message"], "/sys/fs/cgroup", name)
	}
	// Unparseable limits are still ignored, as documented.
	e.create(func(m map[string]any) { m["resourceLimits"] = map[string]string{"cpu": "lots", "memory": "much"} })
}

func TestHideHostPaths(t *testing.T) {
	msg := hideHostPaths("runtime: cgroup cpu/cpu.cfs_quota_us=1: write /sys/fs/cgroup/cpu/osb/x/cpu.cfs_quota_us: invalid argument")
	assert.False(t, strings.Contains(msg, "/sys/fs"), msg)
	assert.Contains(t, msg, "invalid argument")
}
