package steps

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/osb-capstone/acceptance/harness/report"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
)

// Unit tests of the steps' pure helpers.

func TestRubricIDs(t *testing.T) {
	for _, tc := range []struct {
		name string
		tags []string
		want []string
	}{
		{"none", nil, nil},
		{"criterion milestone drill", []string{"@criterion:network", "@milestone:M2", "@drill:D1"}, []string{"network", "M2", "D1"}},
		{"without @", []string{"criterion:credential"}, []string{"credential"}},
		{"other tags ignored", []string{"@large", "@wip", "@target:mock", "@criterion:budget"}, []string{"budget"}},
		{"duplicates once, first order kept", []string{"@milestone:M1", "@criterion:isolation", "@milestone:M1", "@criterion:isolation"}, []string{"M1", "isolation"}},
		{"same id under two kinds counted once", []string{"@criterion:x", "@drill:x"}, []string{"x"}},
		{"unknown kind", []string{"@scoring:security", "@criteria:network"}, nil},
		{"no colon", []string{"@criterion"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, rubricIDs(tc.tags))
		})
	}
}

func TestKeyFingerprint(t *testing.T) {
	assert.Equal(t, "", keyFingerprint(""), "no key, no fingerprint")
	for _, key := range []string{"osb-0123456789abcdef", "k", "a key with spaces and ünïcode"} {
		sum := sha256.Sum256([]byte(key))
		want := hex.EncodeToString(sum[:])[:12]
		got := keyFingerprint(key)
		assert.Equal(t, want, got, key)
		assert.Len(t, got, 12)
		assert.NotContains(t, got, key)
		// The fingerprint the steps look for is the one the bundled server's
		// audit writes and the one the report's redactor prints.
		assert.Equal(t, mockserver.Fingerprint(key), got, "the audit's fingerprint")
		assert.Equal(t, report.Fingerprint(key), got, "the redactor's fingerprint")
	}
	// A known value: sha256("abc") = ba7816bf8f01cfea414140de5dae2223…
	assert.Equal(t, "ba7816bf8f01", keyFingerprint("abc"))
}

func TestIsCreatePath(t *testing.T) {
	for _, p := range []string{"/v1/sandboxes", "/sandboxes", "/v1/sandboxes/", "/sandboxes/", "/v1/sandboxes?x=1", "/sandboxes/?page=2"} {
		assert.True(t, isCreatePath(p), p)
	}
	for _, p := range []string{
		"", "/", "/v1", "/v1/sandboxes/abc", "/v1/sandboxes/abc/pause", "/sandboxes/abc/renew-expiration",
		"/v2/sandboxes", "/v1/sandboxesx", "/api/v1/sandboxes", "/v1/sandboxes/abc/proxy/44772/command",
		"v1/sandboxes",
	} {
		assert.False(t, isCreatePath(p), p)
	}
}
