// Package residual judges drill D5 on what a killed run left behind: the
// sandboxes its key created that still exist after the SIGKILL (Find),
// each bounded by an expiry so that a killed orchestrator never leaves one
// running forever (TTLs), and the submission's reap command, given the
// killed run's CAPSTONE_RUN_ID, deleting every one of them with its own
// key before its expiry (Reaped: from what the server saw of the reap
// command's key, never by a time window). The server that cannot answer is
// the harness's fault (command.Harnessf); what the submission did or did
// not do is its failure (command.Failf).
package residual

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
)

// Find returns the sandboxes among ids that still exist, and the expiry of
// each one that has one.
func Find(ctx context.Context, client *osb.Client, ids []string) (residual []string, expiry map[string]time.Time, err error) {
	expiry = map[string]time.Time{}
	for _, id := range ids {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := client.GetSandbox(c, id)
		cancel()
		if err != nil {
			return nil, nil, command.Harnessf("GET %s: %v", id, err)
		}
		if res.Status == 404 {
			continue
		}
		residual = append(residual, id)
		if res.Decoded && res.Value.ExpiresAt != nil {
			if t, err := time.Parse(time.RFC3339Nano, *res.Value.ExpiresAt); err == nil {
				expiry[id] = t
			}
		}
	}
	return residual, expiry, nil
}

// TTLs checks each sandbox among ids still alive expires at most max after
// its creation; the notes say what each one's was.
func TTLs(ctx context.Context, client *osb.Client, ids []string, max time.Duration) (notes []string, err error) {
	for _, id := range ids {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		res, err := client.GetSandbox(c, id)
		cancel()
		if err != nil {
			return notes, command.Harnessf("GET %s: %v", id, err)
		}
		if res.Status == 404 {
			continue
		}
		if !res.Decoded {
			return notes, command.Failf("GET %s answered %d", id, res.Status)
		}
		sb := res.Value
		if sb.ExpiresAt == nil {
			return notes, command.Failf("residual sandbox %s has no expiry: a killed orchestrator leaves it running forever", id)
		}
		created, err1 := time.Parse(time.RFC3339Nano, sb.CreatedAt)
		expires, err2 := time.Parse(time.RFC3339Nano, *sb.ExpiresAt)
		if err1 != nil || err2 != nil {
			return notes, command.Failf("residual sandbox %s has unparseable times %q / %q", id, sb.CreatedAt, *sb.ExpiresAt)
		}
		if ttl := expires.Sub(created); ttl > max {
			return notes, command.Failf("residual sandbox %s expires %s after creation, more than %ds", id, ttl.Round(time.Second), int(max/time.Second))
		}
		notes = append(notes, fmt.Sprintf("residual %s expires %s after creation", id, expires.Sub(created).Round(time.Second)))
	}
	return notes, nil
}

// Reaped checks, from what the server saw of the reap command's key (saw),
// that it deleted every residual sandbox (DELETE → 204) before its expiry.
// exit is the reap command's exit code, runID the killed run's id.
func Reaped(saw command.Saw, residual []string, expiry map[string]time.Time, exit int, runID string) (string, error) {
	var removed, missed, late []string
	for _, id := range residual {
		var at time.Time
		for _, ev := range saw.Calls {
			if lc := ev.Lifecycle; lc != nil && lc.Method == "DELETE" && lc.Status == 204 && ev.SandboxID == id {
				at = ev.Time
				break
			}
		}
		switch {
		case at.IsZero():
			missed = append(missed, id)
		case !expiry[id].IsZero() && at.After(expiry[id]):
			late = append(late, id)
		default:
			removed = append(removed, id)
		}
	}
	if len(missed) > 0 {
		return "", command.Failf("the reap command (exit %d) did not delete residual sandbox(es) %s of run %s: the server saw no DELETE → 204 for them from its key",
			exit, strings.Join(missed, ", "), runID)
	}
	if len(late) > 0 {
		return "", command.Failf("the reap command deleted %s only after its expiry", strings.Join(late, ", "))
	}
	return fmt.Sprintf("the reap command deleted %d residual sandbox(es) of the killed run (%s), DELETE → 204 with its own key, before expiry",
		len(removed), strings.Join(removed, ", ")), nil
}
