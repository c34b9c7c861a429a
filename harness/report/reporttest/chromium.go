package reporttest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// ChromiumRequired: make test (OSB_SDK_REQUIRED=1) and CI must run the
// browser tests; elsewhere they may be skipped when chromium is absent.
func ChromiumRequired() bool {
	return os.Getenv("OSB_SDK_REQUIRED") == "1" || os.Getenv("CI") == "true"
}

// FindChromium is the chromium binary, or skips the test (fails it where
// ChromiumRequired).
func FindChromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the browser tests start Chromium (about 40 s each); make test runs them")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if ChromiumRequired() {
		t.Fatalf("chromium is not installed and OSB_SDK_REQUIRED=1 or CI=true: run make deps (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (make deps installs Debian's chromium); the browser test is skipped outside CI")
	return ""
}

// ChromiumCmd runs headless chromium with no network: in a fresh network
// namespace when possible (root), and with every host name unresolvable
// and background networking off in any case.
func ChromiumCmd(ctx context.Context, bin, profile string, args ...string) *exec.Cmd {
	flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--no-default-browser-check", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--disable-default-apps", "--no-pings", "--disable-domain-reliability", "--disable-breakpad",
		"--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--user-data-dir=" + profile}
	flags = append(flags, args...)
	if os.Geteuid() == 0 {
		if unshare, err := exec.LookPath("unshare"); err == nil {
			return exec.CommandContext(ctx, unshare, append([]string{"--net", "--", bin}, flags...)...)
		}
	}
	return exec.CommandContext(ctx, bin, flags...)
}

// DumpDOM loads url (a file:// URL, with a #fragment if any) and returns
// the DOM after the page's scripts ran on load.
func DumpDOM(ctx context.Context, t testing.TB, bin, url string, flags ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := ChromiumCmd(ctx, bin, t.TempDir(), append(flags, "--dump-dom", url)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "chromium --dump-dom %s: %s", url, errb.String())
	return out.String()
}

// Screenshot saves a picture of url at path (window width×height), checks
// it is a real picture and logs its path.
func Screenshot(ctx context.Context, t testing.TB, bin, url, path, size string) {
	t.Helper()
	abs, err := filepath.Abs(path)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(abs), 0o755))
	_ = os.Remove(abs)
	var errb bytes.Buffer
	cmd := ChromiumCmd(ctx, bin, t.TempDir(), "--hide-scrollbars", "--window-size="+size, "--screenshot="+abs, url)
	cmd.Stderr = &errb
	require.NoError(t, cmd.Run(), "chromium --screenshot: %s", errb.String())
	fi, err := os.Stat(abs)
	require.NoError(t, err, "screenshot written")
	require.Greater(t, fi.Size(), int64(10_000), "a real picture")
	t.Logf("screenshot: %s", abs)
}
