package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/dockertarget"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// startDockerTarget stands up a real OpenSandbox on Docker (--target docker;
// harness/dockertarget) and describes it as a URL target. Its components go
// into the report header (cfg.dockerVersions): each with its version or image
// id and whether it is official or a stand-in.
func startDockerTarget(ctx context.Context, cfg *runConfig, stderr io.Writer) (core.StartedTarget, error) {
	fmt.Fprintf(stderr, "docker target: standing up opensandbox-server==%s on %s\n", cfg.serverVersion, dockertarget.Endpoint())
	t, err := dockertarget.Start(ctx, dockertarget.Config{ServerVersion: cfg.serverVersion, WheelDir: cfg.wheels, Log: stderr})
	if err != nil {
		return core.StartedTarget{}, fmt.Errorf("docker target: %w", err)
	}
	fmt.Fprintf(stderr, "docker target: %s up (images %s, control plane start %s)\n", t.URL, t.ImageBuild.Round(1e6), t.Startup.Round(1e6))
	if v := cfg.dockerVersions; v != nil {
		for _, c := range t.Components {
			v["component: "+c.Name] = c.Version + " (" + c.Origin + ")"
		}
		if s := t.StandIns(); len(s) > 0 {
			v["stand-ins"] = "verdicts that ran commands or files in a sandbox depend on the execd stand-in; " +
				"egress/vault verdicts on the egress stand-in; both built from this project, not OpenSandbox's images (" + strings.Join(s, ", ") + ")"
		}
	}
	return core.StartedTarget{
		Target: core.Target{Kind: rubric.TargetReal, Domain: urlTargetDomain(t.URL), APIKey: t.APIKey},
		Close: func() {
			if err := t.Close(); err != nil {
				fmt.Fprintf(stderr, "docker target: teardown: %v\n", err)
			}
		},
	}, nil
}
