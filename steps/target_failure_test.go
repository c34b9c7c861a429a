package steps

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// TestTargetFailedCreateIsNotTheSubjects: on a real target a create the
// server answered with a server error (seen in TestDockerCalibration:
// "500 DOCKER::SANDBOX_START_FAILED: Egress sidecar did not become ready
// within 30s", on a loaded machine) leaves the subject nothing to do: when it
// then fails, the run is a harness error naming the target's answer, never
// the submission's failure. A subject that got past it (another create
// succeeded, exit 0) is judged as usual; a failed run without such a create
// is the subject's.
func TestTargetFailedCreateIsNotTheSubjects(t *testing.T) {
	failed := observe.Call{Time: time.Now(), Method: "POST", Path: "/v1/sandboxes", Status: 500,
		Answer: `{"code":"DOCKER::SANDBOX_START_FAILED","message":"Egress sidecar did not become ready within 30s"}`}
	run := func(exit int, calls ...observe.Call) *subjectRun {
		r := &subjectRun{}
		r.res = &subject.Result{ExitCode: exit}
		r.observed = calls
		return r
	}
	err := run(1, failed).usable()
	require.Error(t, err)
	assert.True(t, isHarnessFault(err), "the target's fault: %v", err)
	assert.Contains(t, err.Error(), "POST /v1/sandboxes → 500")
	assert.Contains(t, err.Error(), "DOCKER::SANDBOX_START_FAILED")

	assert.NoError(t, run(0, failed, observe.Call{Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "s"}).usable(),
		"a subject that got past it is judged as usual")
	assert.NoError(t, run(1, observe.Call{Method: "POST", Path: "/v1/sandboxes", Status: 202, SandboxID: "s"}).usable(),
		"a failed run without a failed create is the subject's to answer for")
	assert.NoError(t, run(1, observe.Call{Method: "POST", Path: "/v1/sandboxes", Status: 400}).usable(),
		"a create the server refused as a client error is the subject's")
}
