package mockserver

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// GET /_mock/audit?key_fingerprint= answers one key's share of a shared
// server (its calls and its sandboxes' events), with the cursor for since;
// /_mock/info carries the cursor too.
func TestAdminAuditByKeyAndCursor(t *testing.T) {
	e := newEnv(t)
	const other = "test-key-of-another-subject"
	require.NoError(t, e.srv.AddAPIKey(other))
	info := func() int64 {
		r := e.admin("GET", "/_mock/info", nil)
		require.Equal(t, http.StatusOK, r.Status)
		var v struct {
			AuditSeq int64 `json:"audit_seq"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &v))
		return v.AuditSeq
	}
	type log struct {
		Events  []wire.Event `json:"events"`
		LastSeq int64        `json:"last_seq"`
	}
	get := func(query string) log {
		r := e.admin("GET", "/_mock/audit?"+query, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		var l log
		require.NoError(t, json.Unmarshal(r.Body, &l))
		return l
	}
	start := info()
	mine := e.create(nil)
	r := e.call("POST", "/v1/sandboxes", validCreate(), map[string]string{headerAPIKey: other})
	require.Equal(t, http.StatusAccepted, r.Status)
	theirs := r.JSON(t)["id"].(string)
	require.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/sandboxes/"+mine, nil, nil).Status)
	require.Equal(t, http.StatusNoContent, e.call("DELETE", "/v1/sandboxes/"+theirs, nil, map[string]string{headerAPIKey: other}).Status)

	all := get("since=" + strconv.FormatInt(start, 10))
	require.NotEmpty(t, all.Events)
	assert.Equal(t, all.Events[len(all.Events)-1].Seq, all.LastSeq)
	assert.Equal(t, all.LastSeq, info())

	fp := wire.Fingerprint(testKey)
	got := get("key_fingerprint=" + fp + "&since=" + strconv.FormatInt(start, 10))
	var want []int64
	for _, ev := range all.Events {
		if ev.SandboxID == mine || (ev.Lifecycle != nil && ev.Lifecycle.KeyFingerprint == fp) {
			want = append(want, ev.Seq)
		}
	}
	var seqs []int64
	for _, ev := range got.Events {
		assert.NotEqual(t, theirs, ev.SandboxID, "another key's sandbox")
		seqs = append(seqs, ev.Seq)
	}
	assert.Equal(t, want, seqs)
	assert.Equal(t, all.LastSeq, got.LastSeq)
	assert.Len(t, get("key_fingerprint="+wire.Fingerprint(other)+"&kind=lifecycle").Events, 2) // its create and delete
	assert.Empty(t, get("key_fingerprint=000000000000").Events)
	assert.Empty(t, get("since="+strconv.FormatInt(all.LastSeq, 10)).Events)
	assert.Equal(t, http.StatusBadRequest, e.admin("GET", "/_mock/audit?key_fingerprint="+fp+"&since=-2", nil).Status)
}

// The package-index deny of drill D1 keyed to one API key applies to the
// sandboxes that key creates from then on, not to another key's.
func TestEgressDenyByKey(t *testing.T) {
	eg := newFakeEgress()
	e := newEnv(t, withEgress(eg))
	const other = "test-key-of-another-subject"
	require.NoError(t, e.srv.AddAPIKey(other))
	fp := wire.Fingerprint(testKey)
	policy := func(m map[string]any) { m["networkPolicy"] = map[string]any{"defaultAction": "deny"} }

	assert.Equal(t, http.StatusBadRequest, e.admin("POST", "/_mock/faults/egress-deny", map[string]any{"targets": []string{"bad target"}, "key_fingerprint": fp}).Status)
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/faults/egress-deny", map[string]any{"targets": []string{"pypi.org", "*.pythonhosted.org"}, "key_fingerprint": fp}).Status)
	assert.Empty(t, eg.overrideNow(), "not hub-wide")

	mine := e.create(policy)
	body := validCreate()
	policy(body)
	r := e.call("POST", "/v1/sandboxes", body, map[string]string{headerAPIKey: other})
	require.Equal(t, http.StatusAccepted, r.Status)
	theirs := r.JSON(t)["id"].(string)
	assert.Equal(t, []string{"pypi.org", "*.pythonhosted.org"}, eg.sandboxOverrideNow(mine))
	assert.Empty(t, eg.sandboxOverrideNow(theirs))

	require.Equal(t, http.StatusNoContent, e.admin("DELETE", "/_mock/faults/egress-deny?key_fingerprint="+fp, nil).Status)
	later := e.create(policy)
	assert.Empty(t, eg.sandboxOverrideNow(later), "cleared for new sandboxes")
}
