//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGradeCarelessReapCannotTouchOthers: a broken submission never stops the
// others, here through the bundled server's key tenancy: two
// submissions graded at once on D5, one of them with a reap that deletes
// every sandbox it can list, round after round, while the other's killed run
// leaves its residual sandbox for its own reap. The careless reap lists only
// its own submission's sandboxes (never the other's, though that one was
// alive during its rounds), and the other submission passes D5 with its own
// reap's DELETE → 204.
func TestGradeCarelessReapCannotTouchOthers(t *testing.T) {
	e := requireSubjectEnv(t)
	gradingEnv(t)
	stateDir := t.TempDir()
	gradeCarelessBesideCareful(t, e, []string{"--state-dir", stateDir}, func(string) map[string]*sandboxLife {
		return livesFromAudit(t, filepath.Join(stateDir, "audit.jsonl"))
	})
	assertNoSandboxLeft(t, stateDir)
}

// TestGradeCarelessReapCannotTouchOthersDocker is the same two submissions
// graded at once against a real OpenSandbox on the project's Docker engine
// (OSB_DOCKER_E2E=1; make docker-engine), which has no tenants: each
// submission's view through its recording proxies keeps the careless reap to
// its own sandboxes. The careful submission's sandboxes' lives come from its
// own recorded calls (its bundle's evidence), not a server audit.
func TestGradeCarelessReapCannotTouchOthersDocker(t *testing.T) {
	if os.Getenv("OSB_DOCKER_E2E") != "1" {
		t.Skip("not measured: set OSB_DOCKER_E2E=1 (grades against the docker target on the project's engine)")
	}
	e := requireSubjectEnv(t)
	gradingEnv(t)
	gradeCarelessBesideCareful(t, e, []string{"--target", "docker"}, func(bundle string) map[string]*sandboxLife {
		return livesFromRecordedCalls(t, bundle)
	})
}
