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
// compares with their grades alone.
var hostileReaches = map[string]map[string]string{
	"uid": {
		"hostile-saboteur": "at level uid there is no network namespace: every loopback port is reachable and execd has no authentication, so it runs kill -9 -1 in classmates' sandboxes (why grade refuses a class below level full)",
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
