package agent

import (
	"context"

	"github.com/osb-capstone/acceptance/mock-server/egress/sidecar"
)

// runSidecar starts the in-sandbox egress sidecar (DNS on 127.0.0.1:53,
// relays on :80/:443, proxy on :3128) talking to the host gateway socket.
// It is a variable so tests can replace it.
var runSidecar = func(ctx context.Context, gatewaySocket string) error {
	return sidecar.Run(ctx, gatewaySocket)
}
