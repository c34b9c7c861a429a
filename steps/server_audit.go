package steps

import (
	"context"

	"github.com/osb-capstone/acceptance/harness/command"
)

// fetchKeyShare reads one key's share from the bundled server's audit
// (command.AuditWitness.KeyShare).
func (e *Env) fetchKeyShare(ctx context.Context, keyFP string) (command.Saw, error) {
	return command.AuditWitness{Client: e.client}.KeyShare(ctx, keyFP)
}
