package steps

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// A key's share read with the server's key filter is the share picked out of
// the whole trail: the harness asks for less, and sees the same.
func TestShareOfFilteredEqualsWhole(t *testing.T) {
	st, err := audit.NewStore("", nil)
	require.NoError(t, err)
	lc := func(key, method, path string, status int, body string) *wire.Lifecycle {
		l := &wire.Lifecycle{Method: method, Path: path, Status: status, KeyFingerprint: key}
		if body != "" {
			l.Body = json.RawMessage(body)
		}
		return l
	}
	code := 0
	for round := 0; round < 3; round++ { // interleaved runs of two keys, as two submissions graded at once
		for _, k := range []string{"aaaaaaaaaaaa", "bbbbbbbbbbbb"} {
			id := k[:1] + string(rune('0'+round))
			st.Record(wire.Event{Kind: wire.KindLifecycle, Lifecycle: lc(k, "POST", "/v1/sandboxes", 429, `{"image":{"uri":"python:3.12"}}`)})
			st.Record(wire.Event{SandboxID: id, Kind: wire.KindLifecycle, Lifecycle: lc(k, "POST", "/v1/sandboxes", 202, `{"timeout":600}`)})
			st.Record(wire.Event{SandboxID: id, Kind: wire.KindCommand, Command: &wire.Command{ID: "c", ExitCode: &code}})
			st.Record(wire.Event{Kind: wire.KindLifecycle, Lifecycle: lc("", "POST", "/v1/sandboxes", 401, "")})
			st.Record(wire.Event{SandboxID: id, Kind: wire.KindLifecycle, Lifecycle: lc(k, "DELETE", "/v1/sandboxes/"+id, 204, "")})
			st.Record(wire.Event{SandboxID: id, Kind: wire.KindState, State: &wire.State{To: "Deleted"}})
		}
	}
	whole := st.Events(audit.Query{})
	for _, k := range []string{"aaaaaaaaaaaa", "bbbbbbbbbbbb", "cccccccccccc"} {
		filtered := st.Events(audit.Query{Key: k})
		assert.Less(t, len(filtered), len(whole))
		assert.Equal(t, command.ShareOf(whole, k), command.ShareOf(filtered, k), "key %s", k)
	}
	a := command.ShareOf(whole, "aaaaaaaaaaaa")
	assert.Equal(t, []string{"a0", "a1", "a2"}, a.Created)
	assert.Len(t, a.Calls, 9) // a refused create, a create and a delete per round
	assert.Len(t, a.Events, 12)
	assert.JSONEq(t, `{"timeout":600}`, string(a.CreateBody["a1"]))
	assert.Empty(t, command.ShareOf(whole, "").Calls, "a keyless call belongs to no key")
}
