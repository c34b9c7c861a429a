package core

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/submission"
)

var errStop = errors.New("stop after minting (test)")

// Every key minted for one graded submission carries that submission's
// tenant, and two submissions graded in one session (at once, as `grade`
// does) have different tenants: on the bundled server a careless reap of one
// cannot see the other's sandboxes.
func TestMintedKeysTenantPerSubmission(t *testing.T) {
	var mu sync.Mutex
	keyTenant := map[string]string{} // minted key → the tenant it was minted for
	n := 0
	sess, err := Open(context.Background(), Config{
		Target: "mock", TargetKind: rubric.TargetMock, Seed: 1, SubjectTimeout: time.Minute, Wheels: t.TempDir(), SkipPreflight: true,
	}, func(ctx context.Context, _ map[string]string) (StartedTarget, error) {
		return StartedTarget{
			Target: Target{Kind: rubric.TargetMock, Domain: "127.0.0.1:1", APIKey: "harness-key"},
			MintAPIKey: func(tenant string) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				n++
				k := fmt.Sprintf("minted-%d", n)
				keyTenant[k] = tenant
				return k, nil
			},
		}, nil
	})
	require.NoError(t, err)
	defer sess.Close()

	type seen struct {
		tenant string
		keys   []string
	}
	var got [2]seen
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sub, err := submission.FromCommand("true")
			require.NoError(t, err)
			g := sess.Grade(context.Background(), sub, filepath.Join(t.TempDir(), "bundle"), func(in SuiteInput) (Suite, error) {
				got[i].tenant = in.Tenant
				for range 3 { // as a run, its reap and its contract command would
					k, err := in.MintAPIKey()
					if err != nil {
						return nil, err
					}
					got[i].keys = append(got[i].keys, k)
				}
				return nil, errStop
			}, nil)
			assert.Equal(t, rubric.OverallIncomplete, g.Doc.Verdict, "the suite was stopped")
		}()
	}
	wg.Wait()

	for i, s := range got {
		require.Len(t, s.keys, 3, "submission %d", i)
		assert.Regexp(t, `^submission:\d+$`, s.tenant)
		for _, k := range s.keys {
			assert.Equal(t, s.tenant, keyTenant[k], "submission %d: key %s minted in its own tenant", i, k)
		}
	}
	assert.NotEqual(t, got[0].tenant, got[1].tenant, "two submissions never share a tenant")
}

// Without minted keys (a real server) there is no tenant: every invocation
// uses the target's key, and the README says to grade one by one there.
func TestNoTenantWithoutMinting(t *testing.T) {
	sess, err := Open(context.Background(), Config{
		Target: "http://127.0.0.1:1", TargetKind: rubric.TargetReal, Seed: 1, SubjectTimeout: time.Minute, Wheels: t.TempDir(), SkipPreflight: true,
	}, func(ctx context.Context, _ map[string]string) (StartedTarget, error) {
		return StartedTarget{Target: Target{Kind: rubric.TargetReal, Domain: "127.0.0.1:1", APIKey: "k"}}, nil
	})
	require.NoError(t, err)
	defer sess.Close()
	sub, err := submission.FromCommand("true")
	require.NoError(t, err)
	called := false
	g := sess.Grade(context.Background(), sub, filepath.Join(t.TempDir(), "bundle"), func(in SuiteInput) (Suite, error) {
		called = true
		assert.Nil(t, in.MintAPIKey)
		assert.Empty(t, in.Tenant)
		return nil, errStop
	}, nil)
	assert.Equal(t, rubric.OverallIncomplete, g.Doc.Verdict, "the suite was stopped")
	assert.True(t, called)
}
