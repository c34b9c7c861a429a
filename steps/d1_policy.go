package steps

import (
	"context"
	"path/filepath"
	"time"

	"github.com/osb-capstone/acceptance/harness/indexdeny"
)

// D1 on a real target: the package index is denied through the subject's
// sandbox's own egress sidecar (harness/indexdeny's policy.go says how, and
// judges what the recording proxy and the sidecar's log show).

// denyByPolicyAPI arms the drill on a real target: once the run's create is
// answered, deny hosts in that sandbox's egress policy.
func (e *Env) denyByPolicyAPI(d *drill, hosts []string) {
	d.keyed, d.sharedRun = true, true
	d.Opts.hook = func(ctx context.Context, r *subjectRun, _ func()) {
		indexdeny.WhenCreated(ctx, &r.launch, func(id string) {
			r.policyDeny = indexdeny.Apply(context.WithoutCancel(ctx), e.client, e.opt.Target.SidecarLog, id, hosts)
		})
	}
}

// realDeny is the precondition of D1's checks on a real target
// (indexdeny.Run.Precondition). It keeps the drill's evidence, and returns
// the run as D1 reads it and its install commands.
func realDeny(ctx context.Context, s *scenario, r *subjectRun) (indexdeny.Run, []string, error) {
	run := indexdeny.Run{Deny: r.policyDeny, Started: r.Started, ExitCode: r.Res.ExitCode, Duration: r.Res.Duration,
		Calls: observedCalls(r), Summary: r.sum, Target: string(s.env.opt.Target.Kind)}
	if ev := run.Evidence(); ev != "" {
		s.addEvidence(s.env.writeEvidence("drill", "d1-policy-"+s.slug()+".txt", []byte(ev)))
	}
	installs, err := run.Precondition()
	return run, installs, verdict(ctx, "", err)
}

// reachedForIndexReal is reachedForIndex on a real target.
func reachedForIndexReal(ctx context.Context, s *scenario, r *subjectRun) error {
	run, installs, err := realDeny(ctx, s, r)
	if err != nil {
		return err
	}
	note, err := run.ReachedForIndex(installs)
	return verdict(ctx, note, err)
}

// indexDeniedReal is the network check of D1 on a real target, on the
// egress sidecar's log (kept as evidence).
func indexDeniedReal(ctx context.Context, s *scenario, r *subjectRun) error {
	run, installs, err := realDeny(ctx, s, r)
	if err != nil {
		return err
	}
	var log string
	var lerr error
	ok := false
	if len(installs) > 0 {
		if log, lerr, ok = run.Deny.Log.Read(5 * time.Second); ok {
			s.addEvidence(s.env.writeEvidence("drill", "d1-sidecar-log-"+s.slug()+".txt", []byte(log)))
		}
	}
	note, err := run.IndexDenied(installs, log, lerr, ok)
	return verdict(ctx, note, err)
}

// installAttemptsReal counts the run's install commands on a real target.
func installAttemptsReal(ctx context.Context, s *scenario, r *subjectRun, maxAttempts int) error {
	run, installs, err := realDeny(ctx, s, r)
	if err != nil {
		return err
	}
	s.addEvidence(filepath.Join(r.RelDir, "endpoint-calls.json"))
	note, err := run.InstallAttempts(installs, maxAttempts)
	s.note("%s", note)
	return err
}
