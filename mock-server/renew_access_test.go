package mockserver

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func withRenewIntent(c RenewIntentConfig) envOption {
	return func(cfg *Config) { cfg.RenewIntent = c }
}

// TestRenewOnProxyAccess: OpenSandbox 1.1.1's renew_intent (proxy path) on
// the injectable clock: expiresAt = max(now + extend, current), once per
// min interval, only through the server proxy, only for sandboxes that opted
// in, never with "OpenSandbox-Access-Renew: skip", never when paused.
func TestRenewOnProxyAccess(t *testing.T) {
	e := newEnv(t, withRenewIntent(RenewIntentConfig{Enabled: true, MinInterval: 60 * time.Second}))
	noKey := map[string]string{headerAPIKey: ""}
	expires := func(id string) time.Time {
		t.Helper()
		g := e.call("GET", "/v1/sandboxes/"+id, nil, nil).JSON(t)
		ts, err := time.Parse(time.RFC3339Nano, g["expiresAt"].(string))
		require.NoError(t, err)
		return ts
	}
	proxy := func(id string, hdr map[string]string) {
		t.Helper()
		h := map[string]string{headerAPIKey: ""}
		for k, v := range hdr {
			h[k] = v
		}
		r := e.call("GET", "/v1/sandboxes/"+id+"/proxy/8080/x", nil, h)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	}
	id := e.create(func(m map[string]any) {
		m["timeout"] = 240
		m["extensions"] = map[string]string{"access.renew.extend.seconds": "300"}
	})
	created := expires(id)
	e.clock.Advance(5 * time.Second)

	// direct execd traffic (not the server proxy) renews nothing
	_, err := http.Get("http://" + e.execdAddr(id) + "/ping")
	require.NoError(t, err)
	assert.Equal(t, created, expires(id))

	// "skip" renews nothing
	proxy(id, map[string]string{"OpenSandbox-Access-Renew": "skip"})
	assert.Equal(t, created, expires(id))

	// the first proxied request: now + 300 s (beyond created_at + 240 s)
	proxy(id, nil)
	want := e.clock.Now().UTC().Add(300 * time.Second).Truncate(time.Microsecond)
	assert.Equal(t, want, expires(id))

	// within the min interval: no further renewal
	e.clock.Advance(30 * time.Second)
	proxy(id, nil)
	assert.Equal(t, want, expires(id))

	// after it: renewed again; and the TTL timer follows the new expiry
	e.clock.Advance(31 * time.Second)
	proxy(id, nil)
	want2 := e.clock.Now().UTC().Add(300 * time.Second).Truncate(time.Microsecond)
	assert.Equal(t, want2, expires(id))
	e.clock.Advance(299 * time.Second)
	assert.Equal(t, http.StatusOK, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status, "the old deadline no longer applies")
	e.clock.Advance(2 * time.Second)
	assert.Equal(t, http.StatusNotFound, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status, "expired at the renewed deadline")

	// a later expiry is never shortened: max(now + extend, current)
	long := e.create(func(m map[string]any) {
		m["timeout"] = 3600
		m["extensions"] = map[string]string{"access.renew.extend.seconds": "300"}
	})
	before := expires(long)
	proxy(long, nil)
	assert.Equal(t, before, expires(long))

	// no opt-in extension: nothing
	plain := e.create(func(m map[string]any) { m["timeout"] = 120 })
	before = expires(plain)
	e.clock.Advance(90 * time.Second)
	proxy(plain, nil)
	assert.Equal(t, before, expires(plain))

	// paused: nothing
	paused := e.create(func(m map[string]any) {
		m["timeout"] = 240
		m["extensions"] = map[string]string{"access.renew.extend.seconds": "600"}
	})
	before = expires(paused)
	require.Equal(t, http.StatusAccepted, e.call("POST", "/v1/sandboxes/"+paused+"/pause", nil, nil).Status)
	e.call("GET", "/v1/sandboxes/"+paused+"/proxy/8080/x", nil, noKey)
	assert.Equal(t, before, expires(paused))
}

// TestRenewOnProxyAccessOffByDefault: as in the real server, renew_intent is
// off unless switched on; an opted-in sandbox keeps its expiry.
func TestRenewOnProxyAccessOffByDefault(t *testing.T) {
	e := newEnv(t)
	id := e.create(func(m map[string]any) {
		m["extensions"] = map[string]string{"access.renew.extend.seconds": "3600"}
	})
	before := e.call("GET", "/v1/sandboxes/"+id, nil, nil).JSON(t)["expiresAt"]
	e.clock.Advance(10 * time.Second)
	r := e.call("GET", "/v1/sandboxes/"+id+"/proxy/8080/x", nil, map[string]string{headerAPIKey: ""})
	require.Equal(t, http.StatusOK, r.Status)
	assert.Equal(t, before, e.call("GET", "/v1/sandboxes/"+id, nil, nil).JSON(t)["expiresAt"])
}
