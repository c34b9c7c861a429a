//go:build e2e

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/report"
)

// hostileReaches are the members whose attack a level below full does not
// stop, and why (docs/hostile.md, "Attack × level"). They are left out of
// that level's class: their attack would reach the classmates the test
// compares with their grades alone. At level uid there is none since
// hostile-saboteur's `kill -9 -1` through classmates' execd ports meets
// each execd's access token (the grader asks the bundled server for one
// per sandbox below level full): it is graded with the class, and its
// classmates' grades must be what they are alone.
var hostileReaches = map[string]map[string]string{
	"uid": {},
}

// hostileFailsAt are the entries a member must fail at a level where that
// differs from hostileSet's (level full).
var hostileFailsAt = map[string]map[string][]string{
	"uid": {
		// RLIMIT_FSIZE refuses its 1 TiB truncates, so contract.json stays
		// the honest one and M0 passes; summary.json → /etc/shadow is still
		// planted and dropped at copy-out: M2 fails.
		"hostile-sparse-symlink": {"M2"},
	},
}

// TestHostileCalibrationUID is TestHostileCalibration at level uid (each
// command a uid of its own with rlimits, no namespaces: what root gets in an
// unprivileged container): the attacks on classmates' keys and bundles, the
// grader's memory, its binary, and processes that outlive the grade all
// fail there too; every bundle says level uid.
func TestHostileCalibrationUID(t *testing.T) {
	if why := confine.AvailableUID(); why != "" {
		t.Skip("level uid is not available here: " + why)
	}
	hostileCalibration(t, string(confine.LevelUID))
}

// hostileLevel asserts the bundle's report names the level.
func hostileLevel(t *testing.T, bundle string, want confine.Level) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(bundle, report.JSONFile))
	require.NoError(t, err)
	var doc struct {
		Confinement *struct {
			Level confine.Level `json:"level"`
		} `json:"confinement"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	if assert.NotNil(t, doc.Confinement, "%s: no confinement in report.json", bundle) {
		assert.Equal(t, want, doc.Confinement.Level, "%s: the level report.json names", bundle)
	}
}
