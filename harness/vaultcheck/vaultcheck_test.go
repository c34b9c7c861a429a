package vaultcheck

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/mock-server/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// On a real target the vault's part of a real-token call is read from the
// recording proxy: only a sandbox created with credentialProxy on whose
// vault held this submission's token (by fingerprint) for the data API host
// counts.
func TestVaultHoldersFromTheRecordingProxy(t *testing.T) {
	const host = "data-api.capstone.test"
	tok := observe.Fingerprint("capstone-data-mine")
	other := observe.Fingerprint("capstone-data-someone-else")
	create := func(id string, proxy bool) observe.Call {
		body := `{"image":{"uri":"python:3.12"},"networkPolicy":{"defaultAction":"deny","egress":[{"action":"allow","target":"data-api.capstone.test"}]}}`
		if proxy {
			body = `{"image":{"uri":"python:3.12"},"credentialProxy":{"enabled":true}}`
		}
		return observe.Call{Time: time.Now(), Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: id, Body: json.RawMessage(body)}
	}
	vault := func(id, fp, bindHost, method string, status int) observe.Call {
		body := `{"credentials":[{"name":"data-api","source":{"type":"inline","value":"fingerprint:` + fp + `"}}],` +
			`"bindings":[{"name":"data-api","match":{"hosts":["` + bindHost + `"],"schemes":["http"],"ports":[80]},"auth":{"type":"bearer","credential":"data-api"}}]}`
		return observe.Call{Time: time.Now(), Kind: observe.KindEndpoint, Method: method, Path: "/sandboxes/" + id + "/proxy/18080/credential-vault",
			Status: status, SandboxID: id, Port: 18080, Body: json.RawMessage(body)}
	}
	patch := observe.Call{Kind: observe.KindEndpoint, Method: "PATCH", Path: "/sandboxes/sp/proxy/18080/credential-vault/", Status: 200, SandboxID: "sp", Port: 18080,
		Body: json.RawMessage(`{"credentials":{"add":[{"name":"k","source":{"value":"fingerprint:` + tok + `"}}]},` +
			`"bindings":{"add":[{"name":"b","match":{"hosts":["*.capstone.test"]},"auth":{"type":"customHeaders","headers":[{"name":"X-Key","credential":"k"}]}}]}}`)}
	for _, tc := range []struct {
		name  string
		calls []observe.Call
		want  []string
	}{
		{"vault and credentialProxy", []observe.Call{create("s1", true), vault("s1", tok, host, "POST", 201)}, []string{"s1"}},
		{"no credentialProxy (the token went into the sandbox)", []observe.Call{create("s1", false), vault("s1", tok, host, "POST", 201)}, nil},
		{"no vault at all", []observe.Call{create("s1", true)}, nil},
		{"another submission's token", []observe.Call{create("s1", true), vault("s1", other, host, "POST", 201)}, nil},
		{"bound to another host", []observe.Call{create("s1", true), vault("s1", tok, "api.example.com", "POST", 201)}, nil},
		{"the vault write was refused", []observe.Call{create("s1", true), vault("s1", tok, host, "POST", 412)}, nil},
		{"a patch with a wildcard host and custom headers", []observe.Call{create("sp", true), patch}, []string{"sp"}},
		{"two sandboxes, one with the vault", []observe.Call{create("s1", false), create("s2", true), vault("s2", tok, host, "POST", 201)}, []string{"s2"}},
	} {
		if got := Holders(tc.calls, tok, host); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := Holders([]observe.Call{create("s1", true), vault("s1", "", host, "POST", 201)}, "", host); got != nil {
		t.Errorf("no token: %v", got)
	}
}

// On the bundled server every data API call of the run's sandboxes must have
// been given the credential by the vault, and the real token must have
// reached the API; no call at all is not measured.
func TestOnBundledServer(t *testing.T) {
	req := func(injected bool) wire.Event {
		return wire.Event{SandboxID: "sb", Kind: "egress_request", EgressRequest: &wire.EgressRequest{Host: "data-api.capstone.test", Method: "GET", Path: "/v1/x", Injected: injected, Status: 200}}
	}
	host := "data-api.capstone.test"
	note, err := OnBundledServer(command.Saw{Events: []wire.Event{req(true)}}, host, true, 0)
	require.NoError(t, err)
	assert.Contains(t, note, "1 call(s)")
	_, err = OnBundledServer(command.Saw{Events: []wire.Event{req(true), req(false)}}, host, true, 0)
	assert.True(t, command.IsViolation(err), "%v", err)
	_, err = OnBundledServer(command.Saw{Events: []wire.Event{req(true)}}, host, false, 0)
	assert.True(t, command.IsViolation(err), "%v", err)
	var nm *command.NotMeasured
	_, err = OnBundledServer(command.Saw{}, host, true, 1)
	require.ErrorAs(t, err, &nm)
	_, err = OnRealTarget(nil, true, host, 0, "docker", "")
	assert.True(t, command.IsViolation(err), "%v", err)
	_, err = OnRealTarget(nil, false, host, 0, "docker", "the stub runs on the engine's bridge")
	require.ErrorAs(t, err, &nm)
	assert.Contains(t, nm.Reason, "(the stub runs on the engine's bridge)")
}
