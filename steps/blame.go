package steps

import (
	"context"
	"fmt"

	"github.com/osb-capstone/acceptance/harness/blame"
)

// What a scenario's outcome means for each entry is harness/blame's
// (Verdict, PassStands); the steps read what the runs did (exerciseOf).

// exerciseOf reads what the subject runs of a finished scenario did with
// their own keys (nil when it ran none): the audit on the bundled server, the
// recording proxy's calls on a real target.
func (e *Env) exerciseOf(ctx context.Context, s *scenario) *blame.Exercise {
	runs := append([]*subjectRun(nil), s.runs...)
	if s.run != nil && !containsRun(runs, s.run) {
		runs = append(runs, s.run)
	}
	x := &blame.Exercise{}
	for _, r := range runs {
		if r == nil || r.Res == nil {
			continue
		}
		x.Runs++
		x.Exits = append(x.Exits, r.Res.ExitCode)
		if r.model != nil {
			x.Model += len(r.model.completions())
		}
		saw, err := r.Saw(ctx)
		if err != nil {
			x.Unknown = fmt.Sprintf("reading the audit trail of run %s: %v", r.key, err)
			continue
		}
		x.Add(saw, r.EndpointCalls, e.mock())
	}
	if x.Runs == 0 {
		return nil
	}
	return x
}
