package agent

import (
	"context"

	"github.com/osb-capstone/acceptance/mock-server/egress/sidecar"
)

// startSidecar starts the in-sandbox egress sidecar (DNS on 127.0.0.1:53,
// relays on :80/:443, proxy on :3128) talking to the host gateway socket. It
// returns once every listener is bound (the sidecar then serves until ctx
// ends), so execd (and with it the sandbox's readiness) comes after it, as a
// Docker sandbox joins its sidecar's network only once the sidecar is
// healthy. It is the default of Agent.startSidecar (a test sets its own on
// the agent it makes).
func startSidecar(ctx context.Context, gatewaySocket string) error {
	_, err := sidecar.Start(ctx, sidecar.Config{GatewaySocket: gatewaySocket})
	return err
}
