package egress

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/egress/sidecar"
)

// TestHelperSidecarProcess is the sidecar when this test binary is re-run
// inside a network namespace by TestNetnsEndToEnd.
func TestHelperSidecarProcess(t *testing.T) {
	sock := os.Getenv("OSB_EGRESS_HELPER_SOCKET")
	if sock == "" {
		t.Skip("helper process for TestNetnsEndToEnd only")
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer cancel()
	if err := sidecar.Run(ctx, sock); err != nil {
		fmt.Fprintln(os.Stderr, "sidecar:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// TestNetnsEndToEnd runs the sidecar on its real ports (53/80/443/3128) inside
// a fresh network namespace that has only loopback, and real glibc/python/pip
// clients inside it. Opt-in (root, OSB_EGRESS_NETNS_E2E=1): it creates and
// removes a netns and /etc/netns/<name>/resolv.conf.
func TestNetnsEndToEnd(t *testing.T) {
	if os.Getenv("OSB_EGRESS_NETNS_E2E") != "1" || os.Geteuid() != 0 {
		t.Skip("not measured: set OSB_EGRESS_NETNS_E2E=1 and run as root")
	}
	requireBinary(t, "ip")
	requireBinary(t, "/usr/bin/python3")
	ns := fmt.Sprintf("osbegt-%d", os.Getpid())
	run := func(args ...string) {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%v: %s", args, out)
	}
	run("ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run("ip", "-n", ns, "link", "set", "lo", "up")
	etc := filepath.Join("/etc/netns", ns)
	_, statErr := os.Stat("/etc/netns")
	require.NoError(t, os.MkdirAll(etc, 0o755))
	t.Cleanup(func() {
		_ = os.RemoveAll(etc)
		if os.IsNotExist(statErr) {
			_ = os.Remove("/etc/netns") // only if we created it (and it is empty)
		}
	})
	require.NoError(t, os.WriteFile(filepath.Join(etc, "resolv.conf"), []byte("nameserver 127.0.0.1\n"), 0o644))

	index := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/simple/fakepkg/" {
			fmt.Fprint(w, `<html><body><a href="https://files.pythonhosted.org/p/fakepkg-1.2-py3-none-any.whl">fakepkg-1.2-py3-none-any.whl</a></body></html>`)
			return
		}
		fmt.Fprintf(w, "index host=%s path=%s", r.Host, r.URL.Path)
	}))
	defer index.Close()
	exfil := newStub(t, "exfil.test")
	dir, err := os.MkdirTemp("", "egn")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	rec := &recorder{}
	hub, err := NewHub(HubConfig{Upstreams: map[string]string{"pypi.org": index.URL, "exfil.test": exfil.URL}, StateDir: dir, Audit: rec})
	require.NoError(t, err)
	defer hub.Close()
	p, _ := ParsePolicy([]byte(pypiPolicy))
	att, err := hub.Attach("sbx-netns", p, false)
	require.NoError(t, err)

	helper := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestHelperSidecarProcess$")
	helper.Env = append(os.Environ(), "OSB_EGRESS_HELPER_SOCKET="+att.SocketPath())
	helper.Stderr = os.Stderr
	require.NoError(t, helper.Start())
	t.Cleanup(func() {
		_ = helper.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = helper.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = helper.Process.Kill()
			<-done
		}
	})

	inNS := func(timeout time.Duration, env []string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns}, args...)...)
		cmd.Env = append(isolatedEnv(t), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	require.Eventually(t, func() bool {
		_, err := inNS(5*time.Second, nil, "/usr/bin/python3", "-c", "import socket; socket.create_connection(('127.0.0.1', 443), timeout=1)")
		return err == nil
	}, 10*time.Second, 100*time.Millisecond, "sidecar did not come up in the netns")

	bundle := hub.CABundlePath()
	script := `import socket, ssl, urllib.request
print("A", socket.gethostbyname("pypi.org"))
try:
    socket.getaddrinfo("exfil.test", 443)
except socket.gaierror as e:
    print("NX", e)
print("HTTPS", urllib.request.urlopen("https://pypi.org/simple/", context=ssl.create_default_context(), timeout=10).read().decode())
print("HTTP", urllib.request.urlopen("http://pypi.org/x", timeout=10).read().decode())
try:
    socket.create_connection(("10.1.2.3", 80), timeout=3)
except OSError as e:
    print("IPFAIL", e)
`
	out, err := inNS(60*time.Second, []string{"SSL_CERT_FILE=" + bundle}, "/usr/bin/python3", "-c", script)
	require.NoError(t, err, out)
	assert.Contains(t, out, "A 127.0.0.1")
	assert.Contains(t, out, "NX [Errno -2] Name or service not known")
	assert.Contains(t, out, "HTTPS index host=pypi.org path=/simple/")
	assert.Contains(t, out, "HTTP index host=pypi.org path=/x")
	assert.Contains(t, out, "IPFAIL [Errno 101] Network is unreachable")
	assert.Equal(t, 0, exfil.hits())

	if err := exec.Command("/usr/bin/python3", "-m", "pip", "--version").Run(); err == nil {
		out, err = inNS(60*time.Second, nil, "/usr/bin/python3", "-m", "pip", "index", "versions", "fakepkg",
			"--index-url", "https://pypi.org/simple/", "--cert", bundle)
		require.NoError(t, err, out)
		assert.Contains(t, out, "fakepkg (1.2)")
		require.NoError(t, hub.SetDenyOverride([]string{"pypi.org"}))
		out, err = inNS(60*time.Second, nil, "/usr/bin/python3", "-m", "pip", "index", "versions", "fakepkg", "--retries", "1",
			"--index-url", "https://pypi.org/simple/", "--cert", bundle)
		assert.Error(t, err)
		t.Logf("pip under deny override:\n%s", out)
		assert.True(t, strings.Contains(out, "Name or service not known") || strings.Contains(out, "NameResolutionError") || strings.Contains(out, "No matching distribution"), out)
	}
	var dnsDeny int
	for _, ev := range rec.egress("") {
		if ev.Phase == "dns" && ev.Decision == "deny" {
			dnsDeny++
		}
	}
	assert.Greater(t, dnsDeny, 0)
}
