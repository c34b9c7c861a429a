package dockertarget

import (
	"strings"
	"testing"

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
