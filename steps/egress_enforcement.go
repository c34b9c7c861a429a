package steps

import (
	"context"
	"fmt"
	"time"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// egressProxyOnlyReason is why a network-layer egress verdict is not
// measured on a bundled server that enforces egress at a proxy only.
const egressProxyOnlyReason = "the bundled server runs its sandboxes without a network namespace here (insecure mode, as at the grader's confinement level uid in an unprivileged container such as Gradescope's): a sandbox's egress goes through its gateway only for clients that honour the HTTP(S)_PROXY the server gives it, and a process that ignores them reaches this machine's network directly, so whether a denied host is unreachable from the sandbox is not measured here (grade on a machine with namespaces to measure it)"

// egressEnforcement is how the bundled server enforces its sandboxes'
// network policies (its /_mock/info "egress_enforcement": "network" or
// "proxy"), asked once per grade; "" on a real target.
func (e *Env) egressEnforcement(ctx context.Context) (string, error) {
	if !e.mock() {
		return "", nil
	}
	e.egressOnce.Do(func() {
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		res, err := e.client.Admin().Info(c)
		switch {
		case err != nil:
			e.egressErr = err
		case !res.Decoded:
			e.egressErr = fmt.Errorf("/_mock/info answered %d: %s", res.Status, excerpt(res.Body, 200))
		default:
			e.egressEnf = res.Value.EgressEnforcement
		}
	})
	return e.egressEnf, e.egressErr
}

// egressByProxy says whether the bundled server enforces its sandboxes'
// egress at a proxy only ("proxy": no network namespace); a server that
// cannot be asked is a harness error.
func (e *Env) egressByProxy(ctx context.Context) (bool, error) {
	enf, err := e.egressEnforcement(ctx)
	if err != nil {
		return false, harnessf("reading how the bundled server enforces egress (/_mock/info): %v", err)
	}
	return enf == "proxy", nil
}

// egressNotEnforced ends a check whose verdict depends on the network
// layer's egress enforcement as not measured where the bundled server has
// none (egressProxyOnlyReason; what the gateway recorded is still kept as
// evidence by the caller). It returns nil where egress is enforced at the
// network layer (or on a real target, judged by its own checks).
func egressNotEnforced(ctx context.Context, e *Env, seen string) error {
	byProxy, err := e.egressByProxy(ctx)
	if err != nil || !byProxy {
		return err
	}
	if seen != "" {
		return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s; %s", seen, egressProxyOnlyReason)
	}
	return notMeasured(ctx, string(rubric.CategoryUnsupportedByTarget), "%s", egressProxyOnlyReason)
}
