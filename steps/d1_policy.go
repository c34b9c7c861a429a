package steps

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/indexdeny"
)

// D1 on a real target: the package index is denied through the subject's
// sandbox's own egress sidecar (harness/indexdeny's policy.go says how, and
// judges what the recording proxy and the sidecar's log show).

// denyByPolicyAPI arms the drill on a real target: once the run's create is
// answered, deny hosts in that sandbox's egress policy. Until the deny is in
// place the run's recording proxy holds the subject's execd commands
// (observe.Proxy.HoldCommands), so its install cannot reach the sandbox
// before the denial does: without the hold a subject that creates, uploads
// and installs within a second raced the PATCH (the install 4 ms ahead of it
// on 2026-12-02) and D1 was left not measured. Uploads and pings pass; a
// held command is recorded with how long it was held.
func (e *Env) denyByPolicyAPI(d *drill, hosts []string) {
	d.keyed, d.sharedRun = true, true
	var mu sync.Mutex
	releases := map[*subjectRun]func(){}
	release := func(r *subjectRun) {
		mu.Lock()
		rel := releases[r]
		delete(releases, r)
		mu.Unlock()
		if rel != nil {
			rel()
		}
	}
	d.Opts.proxied = func(_ context.Context, r *subjectRun) error {
		if r.Proxy == nil {
			return nil // no proxy: the deny races the subject (Precondition says when it lost)
		}
		rel := r.Proxy.HoldCommands(indexDenyHoldMax, "drill D1: until the package index is denied in the sandbox's egress policy")
		mu.Lock()
		releases[r] = rel
		mu.Unlock()
		return nil
	}
	d.Opts.hook = func(ctx context.Context, r *subjectRun, _ func()) {
		defer release(r) // applied or not: the subject's commands go on
		indexdeny.WhenCreated(ctx, &r.launch, func(id string) {
			r.policyDeny = indexdeny.Apply(context.WithoutCancel(ctx), e.client, e.opt.Target.SidecarLog, id, hosts)
		})
	}
	d.Opts.finish = func(_ context.Context, r *subjectRun) { release(r) }
}

// indexDenyHoldMax bounds how long D1 holds the subject's commands: Apply
// retries the PATCH for up to a minute while execd starts, within 90 s.
const indexDenyHoldMax = 95 * time.Second

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
