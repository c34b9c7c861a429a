package dockertarget

import (
	"os"
	"strings"
	"testing"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
)

func TestServerConfigTOML(t *testing.T) {
	s := serverConfig{Port: 4242, APIKey: `k"1`, ExecdImage: "e:1", EgressImage: "g:2", StoreDir: "/s", PortMin: 1, PortMax: 2}.toml()
	for _, want := range []string{`host = "127.0.0.1"`, "port = 4242", `api_key = "k\"1"`, `type = "docker"`, `execd_image = "e:1"`,
		`network_mode = "bridge"`, `publish_host = "127.0.0.1"`, `image = "g:2"`, `mode = "dns+nft"`, `path = "/s/opensandbox.db"`} {
		if !strings.Contains(s, want) {
			t.Errorf("config lacks %s:\n%s", want, s)
		}
	}
}

func TestRequirementsPinnedWithHashes(t *testing.T) {
	b, err := Requirements(DefaultServerVersion)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if !strings.Contains(l, "==") || !strings.Contains(l, "--hash=sha256:") {
			t.Errorf("not pinned with a hash: %q", l)
		}
		if strings.HasPrefix(l, "opensandbox-server=="+DefaultServerVersion+" ") {
			found = true
		}
	}
	if !found {
		t.Error("opensandbox-server itself is not pinned")
	}
	if _, err := Requirements("0.0.0-nope"); err == nil || !strings.Contains(err.Error(), "docker-pin-server.sh") {
		t.Errorf("unknown version: %v", err)
	}
}

func TestIsServerContainer(t *testing.T) {
	cases := []struct {
		c   dc.APIContainers
		id  string
		own bool
	}{
		{dc.APIContainers{Labels: map[string]string{labelSandboxID: "a"}}, "a", true},
		{dc.APIContainers{Labels: map[string]string{labelSidecarOf: "b"}}, "b", true},
		{dc.APIContainers{Names: []string{"/sandbox-execd-123"}}, "", true},
		{dc.APIContainers{Names: []string{"/someone-else"}, Labels: map[string]string{"x": "y"}}, "", false},
	}
	for _, c := range cases {
		id, own := isServerContainer(c.c)
		if id != c.id || own != c.own {
			t.Errorf("%+v: got %q %v", c.c, id, own)
		}
	}
}

// TestRemovableOnlyByOwnControlPlane: a run removes the containers of the
// sandboxes its own control plane's log names, created after it started, and
// nothing else on the shared engine: never another control plane's sandbox
// or sidecar created in the same seconds (run 8 of the docker calibration
// lost its reference's sandbox to exactly that), never a fresh execd-archive
// throwaway (another control plane may be copying from it).
func TestRemovableOnlyByOwnControlPlane(t *testing.T) {
	mine, theirs := "ba9c838a-bc8d-415d-bde6-4811f3df67a3", "82938f6e-f5ad-4fed-9009-af9d82ae4703"
	log := `INFO:     2026-12-01 20:24:27+0000 [-] opensandbox_server.services.docker.docker_service: sandbox=` + mine + ` | action=create sandbox container | duration=12.57
INFO:     2026-12-01 20:24:29+0000 [-] uvicorn.access: 127.0.0.1:58286 - "DELETE /v1/sandboxes/0A1B2C3D-0000-4000-8000-000000000001 HTTP/1.1" 404
`
	owned := loggedSandboxes(log)
	if !owned[mine] || !owned["0a1b2c3d-0000-4000-8000-000000000001"] || len(owned) != 2 {
		t.Fatalf("logged sandboxes: %v", owned)
	}
	since := time.Date(2026, 12, 1, 20, 20, 0, 0, time.UTC)
	now := since.Add(10 * time.Minute)
	at := func(d time.Duration) int64 { return since.Add(d).Unix() }
	cases := []struct {
		name string
		c    dc.APIContainers
		ok   bool
	}{
		{"own sandbox", dc.APIContainers{Created: at(time.Minute), Labels: map[string]string{labelSandboxID: mine}}, true},
		{"own sidecar", dc.APIContainers{Created: at(time.Minute), Labels: map[string]string{labelSidecarOf: mine}}, true},
		{"another control plane's sandbox, same seconds", dc.APIContainers{Created: at(time.Minute), Labels: map[string]string{labelSandboxID: theirs}}, false},
		{"another control plane's sidecar", dc.APIContainers{Created: at(time.Minute), Labels: map[string]string{labelSidecarOf: theirs}}, false},
		{"own id but created before the run (a reused id)", dc.APIContainers{Created: at(-time.Hour), Labels: map[string]string{labelSandboxID: mine}}, false},
		{"fresh execd-archive throwaway", dc.APIContainers{Created: now.Add(-5 * time.Second).Unix(), Names: []string{"/sandbox-execd-1"}}, false},
		{"execd-archive left by a dead control plane", dc.APIContainers{Created: now.Add(-time.Hour).Unix(), Names: []string{"/sandbox-execd-2"}}, true},
		{"someone else's", dc.APIContainers{Created: at(time.Minute), Names: []string{"/x"}, Labels: map[string]string{"x": "y"}}, false},
	}
	for _, c := range cases {
		if _, ok := removable(c.c, owned, since, now); ok != c.ok {
			t.Errorf("%s: removable %v, want %v", c.name, ok, c.ok)
		}
	}
	// A log that cannot be read names nothing: nothing is removed.
	if got := loggedSandboxes(""); len(got) != 0 {
		t.Errorf("empty log: %v", got)
	}
}

// TestDeletesInControlPlaneLog reads DELETEs of one sandbox from the control
// plane's own log (uvicorn's access lines, coloured as 1.1.1 writes them):
// only those answered with success count, of that sandbox only.
func TestDeletesInControlPlaneLog(t *testing.T) {
	const id, other = "ba9c838a-bc8d-415d-bde6-4811f3df67a3", "82938f6e-f5ad-4fed-9009-af9d82ae4703"
	log := "\x1b[32mINFO\x1b[0m:     2026-12-01 20:24:27+0000 [-] opensandbox_server.services.docker.docker_service: sandbox=" + id + " | action=start sandbox container | duration=114.71\n" +
		"\x1b[32mINFO\x1b[0m:     2026-12-01 20:24:29+0000 [-] uvicorn.access: 127.0.0.1:58284 - \"GET /v1/sandboxes/" + id + " HTTP/1.1\" 404\n" +
		"\x1b[32mINFO\x1b[0m:     2026-12-01 20:24:30+0000 [-] uvicorn.access: 127.0.0.1:58286 - \"DELETE /v1/sandboxes/" + id + " HTTP/1.1\" 404\n" +
		"\x1b[32mINFO\x1b[0m:     2026-12-01 20:24:31+0000 [-] uvicorn.access: 127.0.0.1:58330 - \"DELETE /v1/sandboxes/" + other + " HTTP/1.1\" 204\n"
	dels, names := deletesIn(log, id)
	if len(dels) != 0 || names != 3 {
		t.Errorf("run 8's sandbox: deletes %q, %d lines name it", dels, names)
	}
	dels, names = deletesIn(log, other)
	if len(dels) != 1 || names != 1 || !strings.Contains(dels[0], `"DELETE /v1/sandboxes/`+other+` HTTP/1.1" 204`) || strings.Contains(dels[0], "\x1b") {
		t.Errorf("a sandbox deleted through the control plane: %q, %d", dels, names)
	}
}

// TestCacheDirIsTheMachines: the docker target's builds are kept once per
// machine, not per checkout (issue 29: a second checkout rebuilt the 1.2 GB
// root filesystem), and OSB_DOCKER_CACHE moves them.
func TestCacheDirIsTheMachines(t *testing.T) {
	t.Setenv("OSB_DOCKER_CACHE", "")
	d := CacheDir()
	if strings.Contains(d, ".cache/docker-target") && !strings.Contains(d, "osb-acceptance") {
		t.Errorf("CacheDir() = %s: a checkout's own .cache", d)
	}
	if os.Geteuid() == 0 && d != "/var/cache/osb-acceptance/docker-target" {
		t.Errorf("CacheDir() as root = %s, want /var/cache/osb-acceptance/docker-target", d)
	}
	t.Setenv("OSB_DOCKER_CACHE", "/elsewhere/cache")
	if got := CacheDir(); got != "/elsewhere/cache" {
		t.Errorf("CacheDir() with OSB_DOCKER_CACHE = %s", got)
	}
}
