package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/observe"
)

// A sandbox that disappears with no DELETE from anyone (issue 17's blame,
// issue 18's docker calibration run 8).
//
// On a real target the harness sees the subject's lifecycle calls through
// the recording proxy, the drills' own deletes, and (the docker target) the
// control plane's log and the engine. A sandbox of the run that the subject
// found gone (a 404 from the server) before its TTL, that no one deleted (no
// DELETE answered with success by the subject's key before it vanished, not
// the drill's sandbox, no DELETE of it in the control plane's log), and whose
// container is gone from the engine, was removed outside the control plane:
// by the machine or by something else sharing the engine. The subject's
// failure after that is not the submission's: the run is a harness error that
// says what was seen.

// unexplainedVanish describes such a sandbox of the run ("" if none, or when
// the target cannot say: then nothing changes).
func (r *subjectRun) unexplainedVanish() string {
	r.vanishOnce.Do(func() {
		if r.fate == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		r.vanishWhy = vanishedUnexplained(ctx, r.observed, r.faultSandbox, r.fate)
	})
	return r.vanishWhy
}

// vanishedUnexplained is unexplainedVanish on the run's lifecycle calls (the
// server's 404 is the sign a sandbox is gone; execd's 404 is a missing file),
// the drill's sandbox (excluded) and the target's view of a sandbox.
func vanishedUnexplained(ctx context.Context, lifecycle []observe.Call, drillSandbox string,
	fate func(context.Context, string) (SandboxFate, error)) string {
	calls := slices.Clone(lifecycle)
	slices.SortStableFunc(calls, func(a, b observe.Call) int { return a.Time.Compare(b.Time) })
	for _, create := range lifecycle {
		id := create.SandboxID
		if create.Method != "POST" || !isCreatePath(create.Path) || create.Status != 202 || id == "" || id == drillSandbox {
			continue
		}
		ttl := createTTL(create.Body)
		var gone *observe.Call
		deleted := false
		for i := range calls {
			c := &calls[i]
			if c.SandboxID != id || c.Time.Before(create.Time) {
				continue
			}
			if c.Status == 404 {
				gone = c
				break
			}
			if c.Method == "DELETE" && c.Status >= 200 && c.Status < 300 && isSandboxPath(c.Path, id) {
				deleted = true // the subject's own DELETE went through first
				break
			}
		}
		if gone == nil || deleted {
			continue
		}
		after := gone.Time.Sub(create.Time)
		if ttl > 0 && after >= ttl {
			continue // expired: the server's TTL, as the subject asked
		}
		f, err := fate(ctx, id)
		if err != nil || len(f.Deletes) > 0 || !f.ContainerGone {
			continue // someone deleted it, it is still there, or the target cannot say
		}
		ttlText := "no TTL (the create set no timeout)"
		if ttl > 0 {
			ttlText = fmt.Sprintf("its TTL was %s", ttl)
		}
		return fmt.Sprintf("sandbox %s disappeared %s after its create (%s): the subject found it gone (%s %s → 404 at %s) "+
			"with no DELETE from anyone: none by the run's key before then (recording proxy), none by a drill, none in the "+
			"control plane's log (%d lines name it), and the engine holds no container of it: it was removed outside the control plane",
			id, after.Round(time.Millisecond), ttlText, gone.Method, clip(gone.Path, 80), gone.Time.UTC().Format("15:04:05.000"), f.LogNames)
	}
	return ""
}

// createTTL is the timeout a create body asked for (0: none, no expiry).
func createTTL(body json.RawMessage) time.Duration {
	var b struct {
		Timeout *float64 `json:"timeout"`
	}
	if json.Unmarshal(body, &b) != nil || b.Timeout == nil || *b.Timeout <= 0 {
		return 0
	}
	return time.Duration(*b.Timeout * float64(time.Second))
}

// isSandboxPath says whether p is the lifecycle path of sandbox id itself.
func isSandboxPath(p, id string) bool {
	p = strings.TrimSuffix(strings.SplitN(p, "?", 2)[0], "/")
	return p == "/v1/sandboxes/"+id || p == "/sandboxes/"+id
}
