package mockserver

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On the real runtime the container log holds what the entrypoint printed,
// stdout and stderr, each line stamped, and not what commands printed (their
// output is streamed to the caller), as `docker logs --timestamps` of a
// sandbox's container on 1.1.1.
func TestDiagnosticsLogsRealRuntime(t *testing.T) {
	srv, _ := realEnv(t) // skipped under -short
	body := validCreate()
	body["entrypoint"] = []string{"/bin/sh", "-c", "echo from-the-entrypoint; echo to-its-stderr >&2; exec tail -f /dev/null"}
	id, base := createSandbox(t, srv, body)
	_, _ = runCommand(t, base, "echo command-output-is-not-logged")
	var content string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		status, m := apiDo(t, srv, "GET", "/v1/sandboxes/"+id+"/diagnostics/logs?scope=container", nil)
		require.Equal(t, 200, status, "%v", m)
		content, _ = m["content"].(string)
		if strings.Contains(content, "from-the-entrypoint") && strings.Contains(content, "to-its-stderr") {
			break
		}
	}
	stamped := regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z `)
	assert.Regexp(t, regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z from-the-entrypoint$`), content)
	assert.Regexp(t, regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z to-its-stderr$`), content)
	assert.NotContains(t, content, "command-output-is-not-logged")
	for _, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		assert.Regexp(t, stamped, l, "every line is stamped")
	}
}
