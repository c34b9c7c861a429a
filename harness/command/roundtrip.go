package command

import (
	"net/http"
	"slices"
	"strings"

	"github.com/osb-capstone/acceptance/harness/observe"
	"github.com/osb-capstone/acceptance/harness/osb"
)

// ExecdRoundTrip counts, in a run's execd calls recorded by its recording
// proxy (a real target), those to the run's own sandboxes that show the
// closed loop: a command run to completion (POST …/command answered 200
// and its stream ended with execd's terminal event, whatever the exit code:
// observe.Call.ExitCode; a stream cut off or a background command is not),
// a file written (POST …/files/upload answered 2xx) and a file read back
// (GET …/files/download answered 200 or 206). Calls through a rewritten
// endpoint and through the server's proxy route alike; another port (the
// egress sidecar) and another sandbox never count.
func ExecdRoundTrip(calls []observe.Call, sandboxes []string) (cmds, ups, downs int) {
	for _, c := range calls {
		if c.Kind != observe.KindEndpoint || !slices.Contains(sandboxes, c.SandboxID) || (c.Port != 0 && c.Port != osb.DefaultExecdPort) {
			continue
		}
		path, _, _ := strings.Cut(c.Path, "?")
		switch {
		case c.Method == http.MethodPost && strings.HasSuffix(path, "/command") && c.Status == http.StatusOK && c.ExitCode != nil:
			cmds++
		case c.Method == http.MethodPost && strings.HasSuffix(path, "/files/upload") && c.Status >= 200 && c.Status < 300:
			ups++
		case c.Method == http.MethodGet && strings.HasSuffix(path, "/files/download") && (c.Status == http.StatusOK || c.Status == http.StatusPartialContent):
			downs++
		}
	}
	return cmds, ups, downs
}
