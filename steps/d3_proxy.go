package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/osb-capstone/acceptance/harness/command"
)

// D3 on a real target: OpenSandbox 1.1.1 sends 429 with Retry-After only
// from a Kubernetes pool at capacity, and its docker runtime has no pools.
// So the subject's own recording proxy answers the run's creates itself, in
// that pool's exact form (harness/observe's Proxy.RefuseCreates: 429
// KUBERNETES::POOL_CAPACITY_EXHAUSTED, Retry-After), for the run's API key
// only and for the run's length only: a classmate's creates, the harness's
// own and the submission's other commands (each with its own proxy) reach
// the target untouched. Each refused create is on the proxy's record as
// injected by the harness (command.CapacityInjected), so no rule blames the
// target for it, and D3's steps judge the attempts and their spacing from
// those records exactly as from the bundled server's audit. Every verdict of
// the scenario says where its 429s came from (drill.provenance).

// capacityByProxy arms the capacity drill d on a real target: the run's
// proxy refuses the run's creates with Retry-After seconds.
func (e *Env) capacityByProxy(d *drill, seconds int) {
	d.keyed = true
	d.provenance = command.CapacityInjected
	d.Opts.proxied = func(_ context.Context, r *subjectRun) error {
		if r.Proxy == nil {
			return fmt.Errorf("no recording proxy stands in front of target %s to answer the run's creates with 429", e.opt.Target.Kind)
		}
		if err := r.Proxy.RefuseCreates(r.KeyFP, seconds); err != nil {
			return err
		}
		d.logf("fault %s switched on in the run's recording proxy for key %s (Retry-After %d s)", d.Name, r.KeyFP, seconds)
		return nil
	}
	d.Opts.finish = func(_ context.Context, r *subjectRun) {
		if r.Proxy != nil {
			r.Proxy.StopRefusing(r.KeyFP)
			d.logf("fault %s switched off", d.Name)
		}
	}
}

// capacityInjectedNote says how many of the run's creates the proxy
// answered itself (its records' Injected), for the evidence; "" on the
// bundled server, whose audit says it.
func capacityInjectedNote(s *scenario, r *subjectRun) string {
	if s.env.mock() || s.drill == nil || s.drill.provenance == "" {
		return ""
	}
	n := 0
	for _, c := range r.Observed {
		if c.Injected != "" && c.Method == "POST" && isCreatePath(c.Path) {
			n++
		}
	}
	s.addEvidence(filepath.Join(r.RelDir, command.ProxyLifecycleFile))
	return fmt.Sprintf("%d create(s) answered 429 with Retry-After %s by the run's recording proxy, none forwarded to the target", n, s.drill.retryAfter.Round(time.Second))
}
