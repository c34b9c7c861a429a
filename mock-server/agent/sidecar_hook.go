package agent

import (
	"context"
	"errors"
)

// runSidecar starts the in-sandbox egress sidecar (DNS on 127.0.0.1:53,
// relays on :80/:443, proxy on :3128) talking to the host gateway socket.
//
// TODO(lead): wire to the egress sidecar package once it compiles:
//
//	import "github.com/osb-capstone/acceptance/mock-server/egress/sidecar"
//	func runSidecar(ctx context.Context, sock string) error { return sidecar.Run(ctx, sock) }
var runSidecar = func(ctx context.Context, gatewaySocket string) error {
	return errors.New("egress sidecar not wired into the agent yet (mock-server/agent/sidecar_hook.go)")
}
