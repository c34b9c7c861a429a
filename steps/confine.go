package steps

import (
	"context"
	"time"

	"github.com/osb-capstone/acceptance/harness/boxpolicy"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/subject"
)

// confine sets spec.Confine for the command l: the box policy of
// harness/boxpolicy (the ports it may reach, the guard of the bundled
// server's admin API, the sandboxes that are the submission's own).
func (e *Env) confine(ctx context.Context, l *launch, spec *subject.Spec) {
	m := e.sub().Manifest
	s := boxpolicy.Session{
		Confine: e.opt.Confine, Unconfined: e.opt.Unconfined, Client: e.client,
		Bundled: e.mock(), TargetDomain: e.opt.Target.Domain,
		SubmissionDir: e.sub().Dir, Commands: []string{m.Run, m.Contract, m.Reap, m.Test.Unit, m.Test.Integration},
		Owners: &e.owners,
	}
	if e.opt.View != nil { // never a typed nil in the interface
		s.View = e.opt.View
	}
	boxpolicy.Apply(ctx, s, l, spec)
}

// boxSeesKeyless: the command's box has a network of its own whose guard
// sees each request it sends (level full; not level uid, not unconfined).
func (e *Env) boxSeesKeyless() bool {
	return e.opt.Confine != nil && e.opt.Confine.Level != confine.LevelUID
}

// budgetLeft is the submission's time left (bounded false: no bound).
func (e *Env) budgetLeft() (time.Duration, bool) {
	if e.opt.SubmissionTimeout <= 0 {
		return 0, false
	}
	e.budgetMu.Lock()
	defer e.budgetMu.Unlock()
	return e.opt.SubmissionTimeout - e.budgetUsed, true
}

func (e *Env) spend(d time.Duration) {
	e.budgetMu.Lock()
	e.budgetUsed += d
	e.budgetMu.Unlock()
}
