package steps

import (
	"context"

	"github.com/osb-capstone/acceptance/harness/command"
)

// Drills D2 and D5 strike "mid-run", once the subject has made progress in
// its sandbox (harness/command: WhenProgressed, read from the run's
// Witness). These are the steps' names for it.

// whenProgressed calls act with the run's first sandbox of its own that saw
// progress (once); the call that timed it is kept in r.faultCause.
func (e *Env) whenProgressed(ctx context.Context, r *subjectRun, act func(sandboxID string)) {
	if r.Witness == nil {
		return
	}
	command.WhenProgressed(ctx, r.Witness.Progress(&r.launch), command.ProgressPoll, func(id, what string) {
		r.faultCause = what
		act(id)
	})
}

// observedCalls is everything the run's recording proxy saw (so far).
func observedCalls(r *subjectRun) []command.Call { return r.ObservedCalls() }

// progressUnobserved says why a drill's fault never fired on a real target
// whose recording proxy saw none of the run's execd or file calls.
func (e *Env) progressUnobserved(r *subjectRun) string {
	return r.ProgressUnobserved(string(e.opt.Target.Kind))
}
