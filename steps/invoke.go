package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// invocation is one run of one of the submission's other entry points
// (contract, reap, test.unit, test.integration), with its own API key so
// the server's audit (or the recording proxy on a real target) attributes
// every call it made.
type invocation struct {
	launch
	name  string      // evidence name
	model *agentModel // its scripted model (nil: the submission has none)

	// What the target saw of its key (loadInvocationAudit: launch.Saw).
	keepOnce sync.Once
	calls    []osb.AuditEvent // lifecycle calls with this invocation's key
	keyless  []osb.AuditEvent // its keyless lifecycle calls (attributed by its box, or alone on the server)
	audit    []osb.AuditEvent // every event of the sandboxes it created
	created  []string         // sandboxes it created
}

// invoke runs one of the submission's commands (Env.launch): working
// directory the submission, the subject environment with a fresh key, {out}
// an empty directory in the evidence. runID is CAPSTONE_RUN_ID (reap gets
// the killed run's).
func (e *Env) invoke(ctx context.Context, field, cmd, name, runID string, timeout time.Duration) *invocation {
	relDir := "evidence"
	for _, seg := range strings.Split(e.repKey(name), "/") {
		relDir = filepath.Join(relDir, sanitize(seg))
	}
	inv := &invocation{launch: e.newLaunch(field, relDir, runID), name: name}
	inv.Keep = inv.keep // what the target saw is evidence, whoever reads it first (Judge, a step)
	lock := command.LockShared
	if field == "contract" && e.mock() && !e.boxSeesKeyless() {
		// A keyless request carries no key to attribute it by. In a box, the
		// box's guard sees each one the command sends (command.Record.Keyless);
		// with confinement off (--insecure-no-confinement, or a machine that
		// cannot confine) or at level uid (no network namespace) nothing does, so the contract command runs alone on
		// the server and every keyless request in its window is its own.
		lock = command.LockExclusive
	}
	inv.model = e.launch(ctx, &inv.launch, launchOpts{cmd: cmd, timeout: timeout, lock: lock, keyless: field == "contract",
		progress: fmt.Sprintf("  … running the submission's %s command", field)})
	if !inv.Launched() {
		return inv
	}
	fields := map[string]any{"field": field, "command": cmd, "run_id": runID}
	if inv.model != nil {
		fields["model_script"] = inv.model.scriptName
	}
	inv.WriteRecord("invocation.json", fields)
	return inv
}

// evidence lists the invocation's evidence files (its logs only when it
// printed something).
func (inv *invocation) evidence(names ...string) []string {
	out := []string{filepath.Join(inv.RelDir, "invocation.json")}
	for _, log := range []string{"stdout.log", "stderr.log", "model-dialogue.md", "model-transcript.jsonl"} {
		if st, err := os.Stat(filepath.Join(inv.Dir, log)); err == nil && st.Size() > 0 {
			out = append(out, filepath.Join(inv.RelDir, log))
		}
	}
	for _, n := range names {
		out = append(out, filepath.Join(inv.RelDir, n))
	}
	return out
}

// loadInvocationAudit reads what the target saw of the invocation
// (launch.Saw: its lifecycle calls by key, its keyless calls, the events of
// the sandboxes it created) and keeps it as evidence (server-saw.json).
func (e *Env) loadInvocationAudit(ctx context.Context, inv *invocation) error {
	if inv.Witness == nil {
		inv.Witness = e.witness() // an invocation made by hand (tests); a launched one has its own
	}
	saw, err := inv.Saw(ctx)
	if err != nil {
		return err
	}
	inv.keep(saw)
	return nil
}

// keep stores what the target saw of the invocation's key, once, with its
// evidence (server-saw.json).
func (inv *invocation) keep(saw command.Saw) {
	inv.keepOnce.Do(func() {
		inv.calls, inv.created, inv.audit, inv.keyless = saw.Calls, saw.Created, saw.Events, saw.Keyless
		b, _ := json.MarshalIndent(map[string]any{"calls_with_its_key": inv.calls, "keyless_calls_while_it_ran": inv.keyless, "sandbox_events": inv.audit}, "", "  ")
		_ = os.WriteFile(filepath.Join(inv.Dir, "server-saw.json"), b, 0o644)
	})
}

// osbEvent is an audit event (short name for the checks).
type osbEvent = osb.AuditEvent
