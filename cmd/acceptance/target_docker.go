package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/osb-capstone/acceptance/harness/dockertarget"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/steps"
)

// startDockerTarget stands up a real OpenSandbox on Docker (--target docker;
// harness/dockertarget) and describes it as a URL target. The returned
// versions go into the report header: every component with its version or
// image id and whether it is official or a stand-in.
func startDockerTarget(ctx context.Context, cfg *runConfig, stderr io.Writer) (target, func(), map[string]string, error) {
	fmt.Fprintf(stderr, "docker target: standing up opensandbox-server==%s on %s\n", cfg.serverVersion, dockertarget.Endpoint())
	t, err := dockertarget.Start(ctx, dockertarget.Config{ServerVersion: cfg.serverVersion, WheelDir: cfg.wheels, Log: stderr})
	if err != nil {
		return target{}, nil, nil, fmt.Errorf("docker target: %w", err)
	}
	fmt.Fprintf(stderr, "docker target: %s up (images %s, control plane start %s)\n", t.URL, t.ImageBuild.Round(1e6), t.Startup.Round(1e6))
	versions := map[string]string{}
	for _, c := range t.Components {
		v := c.Version + " (" + c.Origin + ")"
		versions["component: "+c.Name] = v
	}
	if s := t.StandIns(); len(s) > 0 {
		versions["stand-ins"] = "verdicts that ran commands or files in a sandbox depend on the execd stand-in; " +
			"egress/vault verdicts on the egress stand-in; both built from this project, not OpenSandbox's images (" + strings.Join(s, ", ") + ")"
	}
	closer := func() {
		if err := t.Close(); err != nil {
			fmt.Fprintf(stderr, "docker target: teardown: %v\n", err)
		}
	}
	return target{Target: steps.Target{Kind: rubric.TargetReal, Domain: urlTargetDomain(t.URL), APIKey: t.APIKey}}, closer, versions, nil
}
