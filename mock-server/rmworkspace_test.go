package mockserver

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRealRuntimeRemoveWorkspaceDir: real execd's DELETE /directories is
// os.RemoveAll; on Docker /workspace and /tmp are plain directories of the
// container's writable layer, so `DELETE /directories?path=/workspace` is
// 200 and the tree is gone. Here they are bind mounts on a read-only root:
// before, the call removed nothing and answered 400 "read-only file
// system". Now their contents are removed and the answer is 200 (the empty
// mount point stays: deviation execd-rmdir-mountpoint). Nothing outside the
// sandbox's own directory goes: a link to /root is removed, not followed,
// and another sandbox's workspace is untouched; / is still refused.
func TestRealRuntimeRemoveWorkspaceDir(t *testing.T) {
	srv, _, base := realSandbox(t)
	_, other := createSandbox(t, srv, validCreate())
	_, code := runCommand(t, other, "echo keep > /workspace/other")
	require.NotNil(t, code)
	_, code = runCommand(t, base, "mkdir -p /workspace/d && echo hi > /workspace/d/f && echo kept > /root/keep && ln -s /root /workspace/link && echo x > /tmp/t")
	require.NotNil(t, code)
	require.Equal(t, 0, *code)

	del := func(p string) (int, string) {
		req, err := http.NewRequest(http.MethodDelete, base+"/directories?path="+p, nil)
		require.NoError(t, err)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, p := range []string{"/workspace", "/tmp/"} {
		status, body := del(p)
		assert.Equal(t, http.StatusOK, status, "DELETE /directories?path=%s: %s", p, body)
		assert.Empty(t, body)
	}
	out, _ := runCommand(t, base, "ls -A /workspace /tmp; cat /root/keep")
	assert.Equal(t, "/tmp:|/workspace:|kept", strings.Join(nonEmpty(out), "|"), "emptied, the link's target kept")
	out, _ = runCommand(t, other, "cat /workspace/other")
	assert.Equal(t, []string{"keep"}, nonEmpty(out), "another sandbox is untouched")
	status, body := del("/")
	assert.Equal(t, http.StatusBadRequest, status, body)
}

func nonEmpty(lines []string) []string {
	var out []string
	for _, l := range lines {
		for _, s := range strings.Split(l, "\n") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
