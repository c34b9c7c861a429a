package steps

import (
	"context"

	"github.com/osb-capstone/acceptance/harness/vanish"
)

// Drill D2 is judged on what the subject saw: the first answers it got for
// its sandbox after the fault (harness/vanish says how they are read and
// judged).

// d2DrillName is the drill whose symptom is judged here (expireAfterFirstCommand).
const d2DrillName = "expire-mid-run"

// d2RunAnswers are the answers for run r's vanished sandbox at or after the
// fault: the bundled server's audit (what it saw of the run's key), or a
// real target's recording proxy.
func (e *Env) d2RunAnswers(ctx context.Context, r *subjectRun) ([]vanish.Answer, error) {
	if e.mock() {
		saw, err := r.Saw(ctx)
		return vanish.AnswersFromAudit(saw.Events, r.faultSandbox, r.faultAt), err
	}
	return vanish.AnswersFromCalls(observedCalls(r), r.faultSandbox, r.faultAt), nil
}

// d2Evidence writes what the subject saw after the fault as evidence of
// the run's D2 verdict (vanish.Evidence); it returns the bundle-relative path.
func (s *scenario) d2Evidence(r *subjectRun, answers []vanish.Answer, sym vanish.Symptom) string {
	return s.env.writeEvidence(firstID(s), "d2-first-answers-"+s.slug()+".json", vanish.Evidence(r.faultSandbox, r.faultAt, answers, sym))
}
