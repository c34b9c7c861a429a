package mockserver

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

func withKey(k string) map[string]string { return map[string]string{headerAPIKey: k} }

// specOf is the runtime spec the server started sandbox id with.
func (e *testEnv) specOf(id string) runtime.Spec {
	e.t.Helper()
	sb := e.rt.byID(id)
	require.NotNil(e.t, sb, "sandbox %s was started", id)
	return sb.spec
}

func TestDefaultLimitsApplyToWhatACreateLeavesOut(t *testing.T) {
	e := newEnv(t)
	limits := func(rl map[string]string) runtime.Limits {
		t.Helper()
		return e.specOf(e.create(func(m map[string]any) { m["resourceLimits"] = rl })).Limits
	}
	assert.Equal(t, DefaultSandboxLimits, limits(map[string]string{}), "nothing given: every default")
	assert.Equal(t, runtime.Limits{CPUMilli: 1000, MemoryBytes: 1 << 30, Pids: 256}, DefaultSandboxLimits, "the documented defaults")
	assert.Equal(t, runtime.Limits{CPUMilli: 500, MemoryBytes: 2 << 30, Pids: 64},
		limits(map[string]string{"cpu": "500m", "memory": "2Gi", "pids": "64"}), "what the create gives is kept")
	assert.Equal(t, runtime.Limits{CPUMilli: 250, MemoryBytes: 1 << 30, Pids: 256},
		limits(map[string]string{"cpu": "250m", "memory": "lots", "pids": "-3", "gpu": "1"}), "unparseable values take the default")
	assert.Equal(t, runtime.Limits{CPUMilli: 1000, MemoryBytes: 1 << 30, Pids: 256},
		limits(map[string]string{"cpu": "0", "pids": "0"}), "zero is no limit upstream: the default here")

	e.srv.cfg.DefaultLimits = runtime.Limits{CPUMilli: 2000, MemoryBytes: -1, Pids: 32}
	assert.Equal(t, runtime.Limits{CPUMilli: 2000, Pids: 32}, limits(map[string]string{}), "configured defaults; negative: none")
}

func TestTenantQuotaRefusesCleanly(t *testing.T) {
	e := newEnv(t)
	e.srv.cfg.TenantQuota = Quota{Sandboxes: 2, MemoryBytes: 3 << 30, Pids: -1, CPUMilli: -1}
	assert.Equal(t, Quota{Sandboxes: 64, CPUMilli: 2000, MemoryBytes: 6 << 30, Pids: 2048}, DefaultTenantQuota, "the documented defaults")
	require.NoError(t, e.srv.AddAPIKeyTenant("key-a", "submission:1"))
	require.NoError(t, e.srv.AddAPIKeyTenant("key-b", "submission:2"))
	create := func(key string, rl map[string]string) resp {
		body := validCreate()
		if rl != nil {
			body["resourceLimits"] = rl
		}
		return e.call("POST", "/v1/sandboxes", body, withKey(key))
	}
	started := func() int { e.rt.mu.Lock(); defer e.rt.mu.Unlock(); return len(e.rt.sandboxes) }

	a1 := create("key-a", nil)
	require.Equal(t, http.StatusAccepted, a1.Status, "%s", a1.Body)
	require.Equal(t, http.StatusAccepted, create("key-a", nil).Status)
	before := started()
	r := create("key-a", nil)
	assert.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
	m := r.JSON(t)
	assert.Equal(t, "SANDBOX::INVALID_PARAMETER", m["code"])
	assert.Contains(t, m["message"], "Quota exceeded")
	assert.Contains(t, m["message"], "live sandboxes")
	assert.Equal(t, before, started(), "a refused create starts nothing")

	// another tenant and the untenanted key are not charged for it
	require.Equal(t, http.StatusAccepted, create("key-b", nil).Status)
	for i := 0; i < 3; i++ {
		require.Equal(t, http.StatusAccepted, create(testKey, nil).Status, "untenanted keys have no quota")
	}

	// what they use together is the runtime's: one parent group per tenant, with the quota's limits
	specA, specB := e.specOf(a1.JSON(t)["id"].(string)), e.rt.sandboxes[len(e.rt.sandboxes)-4].spec
	assert.NotEmpty(t, specA.Group)
	assert.Equal(t, runtime.Limits{MemoryBytes: 3 << 30}, specA.GroupLimits, "the tenant's memory; cpu and pids unbounded (negative)")
	assert.NotEqual(t, specA.Group, specB.Group, "another tenant, another group")
	assert.Empty(t, e.rt.sandboxes[len(e.rt.sandboxes)-1].spec.Group, "untenanted: no group")

	// a sandbox gone gives its share back
	id := a1.JSON(t)["id"].(string)
	require.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/sandboxes/"+id, nil, withKey("key-a")).Status)
	assert.Equal(t, http.StatusAccepted, create("key-a", nil).Status)
}

func TestTenantQuotaHoldsUnderConcurrentCreates(t *testing.T) {
	e := newEnv(t)
	e.srv.cfg.TenantQuota = Quota{Sandboxes: 5}
	require.NoError(t, e.srv.AddAPIKeyTenant("key-a", "submission:1"))
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.call("POST", "/v1/sandboxes", validCreate(), withKey("key-a"))
			mu.Lock()
			codes[r.Status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	assert.Equal(t, map[int]int{http.StatusAccepted: 5, http.StatusBadRequest: 15}, codes)
	e.srv.mu.Lock()
	assert.Empty(t, e.srv.pending, "no reservation outlives its create")
	e.srv.mu.Unlock()
}

func TestReleaseTenant(t *testing.T) {
	e := newEnv(t)
	require.NoError(t, e.srv.AddAPIKeyTenant("key-a", "submission:1"))
	require.NoError(t, e.srv.AddAPIKeyTenant("key-a2", "submission:1"))
	require.NoError(t, e.srv.AddAPIKeyTenant("key-b", "submission:2"))
	create := func(k string) string {
		r := e.call("POST", "/v1/sandboxes", validCreate(), withKey(k))
		require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Body)
		return r.JSON(t)["id"].(string)
	}
	a1, a2, b := create("key-a"), create("key-a2"), create("key-b")
	own := create(testKey)

	r := e.admin("POST", "/_mock/tenants/release", map[string]any{"tenant": "submission:1"})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	m := r.JSON(t)
	assert.ElementsMatch(t, []any{a1, a2}, m["sandboxes"])
	assert.EqualValues(t, 2, m["keys_revoked"])
	for _, id := range []string{a1, a2} {
		assert.True(t, e.rt.byID(id).isDestroyed(), "the tenant's sandbox is destroyed")
		assert.Equal(t, http.StatusNotFound, e.call("GET", "/v1/sandboxes/"+id, nil, nil).Status)
	}
	for _, id := range []string{b, own} {
		assert.False(t, e.rt.byID(id).isDestroyed(), "another tenant's (or the server's own) sandbox is untouched")
	}
	for _, k := range []string{"key-a", "key-a2"} {
		assert.Equal(t, http.StatusUnauthorized, e.call("POST", "/v1/sandboxes", validCreate(), withKey(k)).Status, "a released tenant's key is revoked")
		assert.Equal(t, http.StatusUnauthorized, e.call("GET", "/v1/sandboxes", nil, withKey(k)).Status)
	}
	assert.Equal(t, http.StatusOK, e.call("GET", "/v1/sandboxes", nil, withKey("key-b")).Status)
	assert.Error(t, e.srv.AddAPIKeyTenant("key-new", "submission:1"), "a released tenant gets no new key")
	assert.Equal(t, http.StatusBadRequest, e.admin("POST", "/_mock/api-keys", map[string]any{"key": "key-new", "tenant": "submission:1"}).Status)

	// again, or an unknown tenant: nothing to remove, not an error
	r = e.admin("POST", "/_mock/tenants/release", map[string]any{"tenant": "submission:1"})
	assert.Equal(t, http.StatusOK, r.Status)
	assert.Empty(t, r.JSON(t)["sandboxes"])
	assert.Equal(t, http.StatusOK, e.admin("POST", "/_mock/tenants/release", map[string]any{"tenant": "never-seen"}).Status)
	for _, body := range []any{map[string]any{}, map[string]any{"tenant": ""}, map[string]any{"tenant": "x", "extra": 1},
		map[string]any{"tenant": " padded"}, map[string]any{"tenant": strings.Repeat("t", 200)}, "not an object"} {
		r := e.admin("POST", "/_mock/tenants/release", body)
		assert.Equal(t, http.StatusBadRequest, r.Status, "%v: %s", body, r.Body)
		assert.Equal(t, "MOCK::INVALID_PARAMETER", r.JSON(t)["code"])
	}
	assert.Equal(t, http.StatusUnauthorized, e.call("POST", "/_mock/tenants/release", map[string]any{"tenant": "submission:2"}, nil).Status,
		"the admin route needs the admin token")
}

func TestReleasingEveryKeyNeverTurnsAuthOff(t *testing.T) {
	rt := &fakeRuntime{t: t}
	srv, err := New(Config{AdminToken: testAdmin, Runtime: rt})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(func() { _ = srv.Close() })
	require.NoError(t, srv.AddAPIKeyTenant("only-key", "submission:1"))
	_, err = srv.ReleaseTenant("submission:1")
	require.NoError(t, err)
	authOff, ok := srv.keyOK("")
	assert.False(t, authOff)
	assert.False(t, ok, "with its only key revoked the server accepts no key, it does not open up")
}

func TestLimitAndQuotaFlags(t *testing.T) {
	l, err := parseLimitsFlag("cpu=500m, memory=2Gi,pids=none")
	require.NoError(t, err)
	assert.Equal(t, runtime.Limits{CPUMilli: 500, MemoryBytes: 2 << 30, Pids: -1}, l)
	q, err := parseQuotaFlag("sandboxes=4,memory=8Gi")
	require.NoError(t, err)
	assert.Equal(t, Quota{Sandboxes: 4, MemoryBytes: 8 << 30}, q)
	for _, bad := range []string{"cpu", "cpu=", "cpu=-1", "gpu=1", "memory=1Gi,memory=2Gi", "pids=1.5", "memory=lots"} {
		_, err := parseLimitsFlag(bad)
		assert.Error(t, err, bad)
	}
	_, err = parseQuotaFlag("sandboxes=0")
	assert.Error(t, err)
}

// The grader's server keeps named volumes in its own instance directory
// (gone with it), and passes the limits and quotas on to the server.
func TestPrivateVolumesLiveInTheInstance(t *testing.T) {
	_, w := fakeWiring(t)
	root := t.TempDir()
	b, err := StartBundled(t.Context(), BundledConfig{APIKey: testKey, StateRoot: root, PrivateVolumes: true, Wiring: w,
		TenantQuota: Quota{Sandboxes: 3}, DefaultLimits: runtime.Limits{Pids: 99}, VolumeQuotaBytes: 1 << 20})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(b.StateDir, volumesDirName), b.VolumeRoot)
	assert.Equal(t, b.VolumeRoot, b.Server.cfg.VolumeRoot)
	assert.Equal(t, int64(3), b.Server.tenantQuota().Sandboxes)
	assert.Equal(t, int64(99), b.Server.cfg.DefaultLimits.Pids)
	assert.Equal(t, int64(1<<20), b.Server.cfg.VolumeQuotaBytes)
	dir := b.StateDir
	require.NoError(t, b.Close())
	assert.NoDirExists(t, dir, "the volumes go with the instance")

	_, err = StartBundled(t.Context(), BundledConfig{APIKey: testKey, StateRoot: root, PrivateVolumes: true, VolumeRoot: t.TempDir(), Wiring: w})
	assert.Error(t, err, "private volumes and a volume root are exclusive")
}
