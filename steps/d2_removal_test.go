package steps

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// TestD2RemovalAfterSubjectEndedIsNotMeasured: on a real target the
// harness's DELETE of the subject's sandbox can take seconds (Docker stops
// the containers first) while the sandbox keeps answering. When its 204 came
// only after the subject had ended, the sandbox never disappeared while the
// subject was running: D2's precondition is unmet (not measured, never
// failed). A removal that completed while the subject ran is the drill's
// fault as before. Found by TestDockerCalibration (cmd/acceptance).
func TestD2RemovalAfterSubjectEndedIsNotMeasured(t *testing.T) {
	e, _ := blameEnv(t, core.Target{Kind: rubric.TargetReal, Domain: "127.0.0.1:9", APIKey: "k-platform"})
	start := time.Now().Add(-time.Minute)
	mk := func(doneAfter time.Duration) context.Context {
		s := &scenario{env: e, name: "The sandbox disappears mid-run", tags: []string{"@drill:D2"}, ids: []string{"D2"}}
		s.run = &subjectRun{key: "d2", launch: launch{started: start, res: &subject.Result{ExitCode: 0, Duration: 10 * time.Second}},
			faultSandbox: "sb-1", faultAt: start.Add(2 * time.Second), faultDone: start.Add(doneAfter), faultCause: "POST /files/upload → 200"}
		return context.WithValue(context.Background(), scenarioKey{}, s)
	}

	err := sandboxDisappeared(mk(12 * time.Second)) // 204 two seconds after the subject ended
	var nm *notMeasuredError
	require.True(t, errors.As(err, &nm), "not measured: %v", err)
	assert.Equal(t, string(rubric.CategoryPreconditionUnmet), nm.Category)
	assert.Contains(t, nm.Reason, "the target took 10s to remove sandbox sb-1")
	assert.Contains(t, nm.Reason, "never disappeared while the subject was running")

	assert.NoError(t, sandboxDisappeared(mk(5*time.Second)), "a removal that took effect mid-run is the drill's fault")
}
