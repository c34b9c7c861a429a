package core

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// Once a submission's suites have ended, the grader releases its tenant on
// the bundled server over the admin API (and only then: D5 judges the
// residue its reap left inside the suite); a target without tenants gets no
// such call.
func TestGradeReleasesTheSubmissionsTenantAfterItsSuites(t *testing.T) {
	var mu sync.Mutex
	var events []string
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Tenant string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		events = append(events, r.Method+" "+r.URL.Path+" token="+r.Header.Get("X-Mock-Admin-Token")+" tenant="+body.Tenant)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"tenant":"` + body.Tenant + `","keys_revoked":3,"sandboxes":[],"snapshots":0,"volumes":[]}`))
	}))
	defer admin.Close()
	for _, tc := range []struct {
		name    string
		kind    rubric.Target
		mint    bool
		release bool
	}{
		{"bundled server", rubric.TargetMock, true, true},
		{"real server", rubric.TargetReal, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			events = nil
			mu.Unlock()
			sess, err := Open(context.Background(), Config{
				Target: "mock", TargetKind: tc.kind, Seed: 1, SubjectTimeout: time.Minute, Wheels: t.TempDir(), SkipPreflight: true,
			}, func(ctx context.Context, _ map[string]string) (StartedTarget, error) {
				st := StartedTarget{Target: Target{Kind: tc.kind, Domain: strings.TrimPrefix(admin.URL, "http://"), APIKey: "harness-key", AdminToken: "admin-tok"}}
				if tc.mint {
					st.MintAPIKey = func(string) (string, error) { return "minted", nil }
				}
				return st, nil
			})
			require.NoError(t, err)
			defer sess.Close()
			sub, err := submission.FromCommand("true")
			require.NoError(t, err)
			var tenant string
			sess.Grade(context.Background(), sub, filepath.Join(t.TempDir(), "bundle"), func(in SuiteInput) (Suite, error) {
				tenant = in.Tenant
				mu.Lock()
				events = append(events, "suite")
				mu.Unlock()
				return nil, errStop
			}, nil)
			mu.Lock()
			defer mu.Unlock()
			if !tc.release {
				assert.Equal(t, []string{"suite"}, events, "no release on a target without tenants")
				return
			}
			require.NotEmpty(t, tenant)
			assert.Equal(t, []string{"suite", "POST /_mock/tenants/release token=admin-tok tenant=" + tenant}, events,
				"released once, after the suite, with the admin token")
		})
	}
}
