package observe

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// While commands are held (drill D1 on a real target) an execd command
// reaches the target only once released, and is recorded with the time it
// went on and how long it was held; uploads and pings pass at once. A hold
// never released forwards the command after its bound, saying so.
func TestHoldCommandsUntilReleased(t *testing.T) {
	var mu sync.Mutex
	arrived := map[string]time.Time{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived[r.URL.Path] = time.Now()
		mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	defer up.Close()
	p, err := Start(up.URL)
	require.NoError(t, err)
	defer p.Close()
	base := "http://" + p.Domain() + "/sandboxes/sb1/proxy/44772"

	release := p.HoldCommands(10*time.Second, "drill D1: test")
	done := make(chan time.Time, 1)
	go func() {
		res, err := http.Post(base+"/command", "application/json", strings.NewReader(`{"command":"pip install tabulate"}`))
		if err == nil {
			res.Body.Close()
		}
		done <- time.Now()
	}()
	for _, path := range []string{"/files/upload", "/ping"} {
		res, err := http.Post(base+path, "application/octet-stream", strings.NewReader("x"))
		require.NoError(t, err)
		res.Body.Close()
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	_, cmdEarly := arrived["/sandboxes/sb1/proxy/44772/command"]
	_, upload := arrived["/sandboxes/sb1/proxy/44772/files/upload"]
	mu.Unlock()
	assert.False(t, cmdEarly, "the command reached the target while held")
	assert.True(t, upload, "an upload is not held")
	released := time.Now()
	release()
	release() // twice is fine
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the held command never went on after release")
	}
	mu.Lock()
	got := arrived["/sandboxes/sb1/proxy/44772/command"]
	mu.Unlock()
	assert.False(t, got.Before(released), "the command arrived before the release")
	var cmd Call
	for _, c := range p.EndpointCalls() {
		if strings.HasSuffix(c.Path, "/command") {
			cmd = c
		}
		if !strings.HasSuffix(c.Path, "/command") && c.Held != "" {
			t.Errorf("%s was held: %s", c.Path, c.Held)
		}
	}
	assert.Contains(t, cmd.Held, "drill D1: test")
	assert.Contains(t, cmd.Held, "released")
	assert.False(t, cmd.Time.Before(released), "recorded at %s, released at %s: Time is when it went on", cmd.Time, released)
	assert.Equal(t, "pip install tabulate", cmd.Command)

	// After release nothing is held.
	res, err := http.Post(base+"/command", "application/json", strings.NewReader(`{"command":"true"}`))
	require.NoError(t, err)
	res.Body.Close()
	calls := p.EndpointCalls()
	assert.Empty(t, calls[len(calls)-1].Held)

	// A hold never released gives way after its bound.
	p.HoldCommands(200*time.Millisecond, "drill D1: test")
	start := time.Now()
	res, err = http.Post(base+"/command", "application/json", strings.NewReader(`{"command":"true"}`))
	require.NoError(t, err)
	res.Body.Close()
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	calls = p.EndpointCalls()
	assert.Contains(t, calls[len(calls)-1].Held, "not released within 200ms, forwarded anyway")
}
