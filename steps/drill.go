package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
	"github.com/osb-capstone/acceptance/harness/osb"
)

// drill is a simulated fault, as data: a name, whether the target can inject
// it (and why not), and how to switch it on and off around one subject run.
// Drills that change server-wide behaviour run exclusively (faultMu).
type drill struct {
	Name      string
	Available func(e *Env) (bool, string)
	Setup     func(ctx context.Context, e *Env) error
	Teardown  func(ctx context.Context, e *Env)
	Opts      runOpts
	log       []string
	// retryAfter is the Retry-After of a capacity fault (D3).
	retryAfter time.Duration
	// keyed drills act on the run's own key, sandbox or process only (no
	// server-wide fault), so they need not run alone.
	keyed bool
	// sharedRun: the hook acts on the run only, so every scenario that asks
	// for this drill shares one run (D1 on a real target).
	sharedRun bool
	// provenance says where the fault came from when it is not the target's
	// own doing (D3 on a real target: the harness's recording proxy); every
	// measured verdict of the scenario carries it (recordFor).
	provenance string
}

// faultProvenance is the scenario's drill's provenance ("" none).
func (s *scenario) faultProvenance() string {
	if s.drill == nil {
		return ""
	}
	return s.drill.provenance
}

func (d *drill) logf(format string, args ...any) {
	d.log = append(d.log, time.Now().UTC().Format(time.RFC3339Nano)+" "+fmt.Sprintf(format, args...))
}

// keyedFault has the drill switch a fault on for the run's own API key just
// before the subject starts (on; route names the admin route in errors) and
// off once it has ended (off). The fault reaches no other run.
func (d *drill) keyedFault(route string,
	on func(ctx context.Context, keyFP string) (*osb.Result[osb.Empty], error),
	off func(ctx context.Context, keyFP string) (*osb.Result[osb.Empty], error)) {
	d.keyed = true
	d.Opts.prepare = func(ctx context.Context, r *subjectRun) error {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		defer cancel()
		res, err := on(c, r.KeyFP)
		if err != nil {
			return err
		}
		if !res.OK() {
			return fmt.Errorf("%s answered %d: %s", route, res.Status, excerpt(res.Body, 200))
		}
		d.logf("fault %s switched on for key %s", d.Name, r.KeyFP)
		return nil
	}
	d.Opts.finish = func(ctx context.Context, r *subjectRun) {
		c, cancel := ctxTimeout(ctx, 10*time.Second)
		defer cancel()
		_, _ = off(c, r.KeyFP)
		d.logf("fault %s switched off", d.Name)
	}
}

// mockOnly is the availability of drills that need the bundled server's admin API.
func mockOnly(e *Env) (bool, string) {
	if e.mock() {
		return true, ""
	}
	return false, fmt.Sprintf("the suite injects this fault through the bundled server's admin API only; it does not inject it on target %s", e.opt.Target.Kind)
}

// runDrill runs the subject once under the scenario's drill (alone on the
// server unless the drill is keyed to the run). A drill without a hook during
// the run is the same run for every scenario that asks for it (D1's two
// scenarios share one run); its prepare and finish act on the run only.
func (e *Env) runDrill(ctx context.Context, s *scenario, fixture string) *subjectRun {
	d := s.drill
	if d.Opts.hook == nil || d.sharedRun {
		return e.runOnce("drill:"+fixture+"-"+d.Name, func() *subjectRun { return e.runDrillNow(ctx, d, fixture) })
	}
	return e.runDrillNow(ctx, d, fixture)
}

func (e *Env) runDrillNow(ctx context.Context, d *drill, fixture string) *subjectRun {
	if d.keyed {
		e.faultMu.RLock()
		defer e.faultMu.RUnlock()
	} else {
		e.faultMu.Lock()
		defer e.faultMu.Unlock()
	}
	key := fixture + "-" + d.Name
	if d.Setup != nil {
		if err := d.Setup(ctx, e); err != nil {
			return &subjectRun{key: key, fixture: fixture, launch: launch{Field: "run", Err: fmt.Errorf("switching on the simulated fault %s: %w", d.Name, err)}}
		}
		d.logf("fault %s switched on", d.Name)
	}
	o := d.Opts
	o.lock = command.LockNone // held here, around the injection
	r := e.runSubject(ctx, key, fixture, o)
	if d.Teardown != nil {
		d.Teardown(context.WithoutCancel(ctx), e)
		d.logf("fault %s switched off", d.Name)
	}
	return r
}
