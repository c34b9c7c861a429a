package agent

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// TestExecdAnswersOnlyAfterSidecarListens: the runtime calls a sandbox ready
// on its first answered /ping; execd must not answer before the egress
// sidecar's start has returned (every listener bound).
func TestExecdAnswersOnlyAfterSidecarListens(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "gw.sock")
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	started := make(chan struct{})
	fakeSidecar := func(ctx context.Context, gw string) error {
		if gw != sock {
			t.Errorf("sidecar got gateway %q, want %q", gw, sock)
		}
		close(started)
		<-release
		return nil
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := New(runtime.AgentConfig{Root: t.TempDir(), GatewaySocket: sock}, nil)
	a.startSidecar = fakeSidecar
	done := make(chan error, 1)
	go func() { done <- a.serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	<-started
	ping := func(timeout time.Duration) error {
		c := &http.Client{Timeout: timeout}
		res, err := c.Get("http://" + ln.Addr().String() + "/ping")
		if err == nil {
			res.Body.Close()
		}
		return err
	}
	if err := ping(300 * time.Millisecond); err == nil {
		t.Fatal("execd answered /ping while the sidecar was still starting")
	}
	close(release)
	if err := ping(5 * time.Second); err != nil {
		t.Fatalf("execd after the sidecar started: %v", err)
	}
}
