package mockserver

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func (s *Server) plantedCanaries() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]string, len(s.canaries))
	for k, v := range s.canaries {
		out[k] = v
	}
	return out
}

// TestCanariesAddOnlyRefuseTheWiper replays the canary wiper: a submission
// that got hold of the admin token PUTs an empty canary set (and then tries
// to overwrite or replace the planted values). Every such request is refused
// with 409 and leaves the planted set as it was; adding stays possible, as
// graders running several submissions at once need.
func TestCanariesAddOnlyRefuseTheWiper(t *testing.T) {
	e := newEnv(t)
	planted := map[string]string{"subject_api_key_abc": "planted-key-111111", "data_api_token_def": "planted-token-222222"}
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/canaries", map[string]any{"canaries": planted}).Status)

	for _, attack := range []struct {
		method string
		body   map[string]string
	}{
		{"PUT", map[string]string{}}, // the real attack: empty the set
		{"PUT", map[string]string{"subject_api_key_abc": "planted-key-111111"}},       // drop one
		{"PUT", map[string]string{"other": "something-else-333"}},                     // replace by another set
		{"POST", map[string]string{"subject_api_key_abc": "not-the-key-you-planted"}}, // change a value
		{"PUT", map[string]string{"subject_api_key_abc": "xxxxxxxxxx", "data_api_token_def": "planted-token-222222"}},
	} {
		r := e.admin(attack.method, "/_mock/canaries", map[string]any{"canaries": attack.body})
		assert.Equal(t, http.StatusConflict, r.Status, "%s %v: %s", attack.method, attack.body, r.Body)
		assert.Equal(t, "MOCK::CANARIES_ADD_ONLY", r.JSON(t)["code"], "%s", r.Body)
		assert.Equal(t, planted, e.srv.plantedCanaries(), "a refused %s must change nothing", attack.method)
	}

	// Re-sending what is planted, adding a label, and a PUT that keeps every
	// planted canary are all adds.
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/canaries", map[string]any{"canaries": planted}).Status)
	require.Equal(t, http.StatusNoContent, e.admin("POST", "/_mock/canaries", map[string]any{"canaries": map[string]string{"second": "second-submission-444"}}).Status)
	all := map[string]string{"subject_api_key_abc": "planted-key-111111", "data_api_token_def": "planted-token-222222",
		"second": "second-submission-444", "third": "third-value-555555"}
	require.Equal(t, http.StatusNoContent, e.admin("PUT", "/_mock/canaries", map[string]any{"canaries": all}).Status)
	assert.Equal(t, all, e.srv.plantedCanaries())

	// The refusal is on the record (the audit names the label, never a value).
	a := e.admin("GET", "/_mock/audit?kind=fault", nil)
	assert.Contains(t, string(a.Body), "canaries-add-only")
	assert.NotContains(t, string(a.Body), "planted-key-111111")
}
