package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// keyShare is what the bundled server recorded of one API key: the share of
// a shared server that belongs to one subject run or one invocation (each
// has its own key).
type keyShare struct {
	calls      []osb.AuditEvent           // every lifecycle call made with the key (refused creates too), in Seq order
	created    []string                   // sandboxes a create with the key made (202), in order
	createBody map[string]json.RawMessage // each created sandbox's create request
	events     []osb.AuditEvent           // every event of those sandboxes, in Seq order
}

// shareOf picks one key's share out of audit events (any superset of it, in
// Seq order). An empty fingerprint owns nothing: a call without a key cannot
// be attributed by key.
func shareOf(events []osb.AuditEvent, keyFP string) keyShare {
	sh := keyShare{createBody: map[string]json.RawMessage{}}
	if keyFP == "" {
		return sh
	}
	mine := map[string]bool{}
	for _, ev := range events {
		lc := ev.Lifecycle
		if ev.Kind != "lifecycle" || lc == nil || lc.KeyFingerprint != keyFP {
			continue
		}
		sh.calls = append(sh.calls, ev)
		if lc.Method == "POST" && isCreatePath(lc.Path) && lc.Status == 202 && ev.SandboxID != "" && !mine[ev.SandboxID] {
			mine[ev.SandboxID] = true
			sh.created = append(sh.created, ev.SandboxID)
			sh.createBody[ev.SandboxID] = lc.Body
		}
	}
	for _, ev := range events {
		if ev.SandboxID != "" && mine[ev.SandboxID] {
			sh.events = append(sh.events, ev)
		}
	}
	return sh
}

// auditQuery asks the bundled server's audit for the events q selects.
func (e *Env) auditQuery(ctx context.Context, q osb.AuditQuery, limit time.Duration) (*osb.AuditLog, error) {
	c, cancel := ctxTimeout(ctx, limit)
	defer cancel()
	res, err := e.client.Admin().Audit(c, q)
	if err != nil {
		return nil, err
	}
	if !res.Decoded {
		return nil, fmt.Errorf("/_mock/audit answered %d: %s", res.Status, excerpt(res.Body, 200))
	}
	return &res.Value, nil
}

// fetchKeyShare reads one key's share from the bundled server: the server
// filters by key (its calls and its sandboxes' events), so the answer grows
// with what that key did, not with everything graded on the server so far.
// The events are split again here, so a server that ignored the filter
// would give the same share.
func (e *Env) fetchKeyShare(ctx context.Context, keyFP string) (keyShare, error) {
	if keyFP == "" {
		return shareOf(nil, ""), nil
	}
	log, err := e.auditQuery(ctx, osb.AuditQuery{Key: keyFP}, 30*time.Second)
	if err != nil {
		return keyShare{}, err
	}
	return shareOf(log.Events, keyFP), nil
}

// auditCursor is the bundled server's newest audit Seq: what is recorded
// from now on has a greater one. 0 (everything) when the server does not say.
func (e *Env) auditCursor(ctx context.Context) int64 {
	c, cancel := ctxTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := e.client.Admin().Info(c)
	if err != nil || !res.Decoded {
		return 0
	}
	return res.Value.AuditSeq
}

// keylessCalls are the lifecycle calls without a key that the server
// recorded after the cursor, between from and to.
func (e *Env) keylessCalls(ctx context.Context, since int64, from, to time.Time) ([]osb.AuditEvent, error) {
	log, err := e.auditQuery(ctx, osb.AuditQuery{Kind: "lifecycle", Since: since}, 30*time.Second)
	if err != nil {
		return nil, err
	}
	var out []osb.AuditEvent
	for _, ev := range log.Events {
		if lc := ev.Lifecycle; ev.Kind == "lifecycle" && lc != nil && lc.KeyFingerprint == "" && !ev.Time.Before(from) && !ev.Time.After(to) {
			out = append(out, ev)
		}
	}
	return out, nil
}
