package core

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Config.StubsStarted is told this session's stubs (the same upstreams the
// target starter gets) before the target starts; a session without it
// starts as before.
func TestStubsStartedIsPerSession(t *testing.T) {
	var told, started map[string]string
	errStop := errors.New("the test stops here")
	_, err := Open(context.Background(), Config{
		Target: "mock", TargetKind: rubric.TargetMock, Seed: 1, SubjectTimeout: time.Minute, Wheels: t.TempDir(),
		StubsStarted: func(ups map[string]string) { told = ups },
	}, func(ctx context.Context, ups map[string]string) (StartedTarget, error) {
		started = ups
		return StartedTarget{}, errStop
	})
	require.ErrorIs(t, err, errStop)
	require.NotEmpty(t, told)
	assert.Equal(t, started, told)

	_, err = Open(context.Background(), Config{
		Target: "mock", TargetKind: rubric.TargetMock, Seed: 1, SubjectTimeout: time.Minute, Wheels: t.TempDir(),
	}, func(ctx context.Context, ups map[string]string) (StartedTarget, error) {
		return StartedTarget{}, errStop
	})
	require.ErrorIs(t, err, errStop, "no hook: the session starts as before")
}
