package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/osb-capstone/acceptance/harness/fidelity"
)

// fidelityMain records runs into the fidelity ledger and regenerates
// FIDELITY.md (harness/fidelity).
func fidelityMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("fidelity", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("dir", "harness/fidelity", "the ledger's directory (runs/*.json, FIDELITY.md)")
	recMock := fs.String("record-mock", "", "a report bundle of a run against the bundled server to record first")
	recDocker := fs.String("record-docker", "", "a report bundle of a run against --target docker to record first")
	recUpstream := fs.String("record-docker-upstream", "", "a report bundle of a --target docker run with upstream-built execd and egress to record first")
	recUpgrade := fs.String("record-upgrade", "", "an upgrade-check directory (upgrade-check.json) to record first")
	explain := fs.String("explain-upgrade", "", "with --record-upgrade: a file whose text explains every difference the check found (kept in the ledger)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	for name, bundle := range map[string]string{"mock": *recMock, "docker": *recDocker, "docker-upstream": *recUpstream} {
		if bundle == "" {
			continue
		}
		r, err := fidelity.FromReport(bundle)
		if err != nil {
			fmt.Fprintf(stderr, "acceptance fidelity: %v\n", err)
			return 2
		}
		if wd, err := os.Getwd(); err == nil {
			r.RelativeTo(wd)
		}
		if want := map[string]string{"mock": "mock", "docker": "real", "docker-upstream": "real"}[name]; r.TargetKind != want {
			fmt.Fprintf(stderr, "acceptance fidelity: %s is a %s run, not %s\n", bundle, r.TargetKind, name)
			return 2
		}
		if err := fidelity.Save(*dir, name, r); err != nil {
			fmt.Fprintf(stderr, "acceptance fidelity: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "recorded %s as runs/%s.json\n", bundle, name)
	}
	if *recUpgrade != "" {
		text := ""
		if *explain != "" {
			b, err := os.ReadFile(*explain)
			if err != nil {
				fmt.Fprintf(stderr, "acceptance fidelity: --explain-upgrade: %v\n", err)
				return 2
			}
			text = strings.TrimSpace(string(b))
		}
		u, err := fidelity.UpgradeFromCheck(*recUpgrade, text)
		if err == nil {
			err = fidelity.SaveUpgrade(*dir, u)
		}
		if err != nil {
			fmt.Fprintf(stderr, "acceptance fidelity: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "recorded %s as runs/upgrade.json\n", *recUpgrade)
	}
	mock, haveMock, err := fidelity.Load(*dir, "mock")
	if err == nil {
		var real, upstream fidelity.Run
		var haveReal, haveUpstream, haveUpgrade bool
		var upgrade fidelity.Upgrade
		real, haveReal, err = fidelity.Load(*dir, "docker")
		if err == nil {
			upstream, haveUpstream, err = fidelity.Load(*dir, "docker-upstream")
		}
		if err == nil {
			upgrade, haveUpgrade, err = fidelity.LoadUpgrade(*dir)
		}
		if err == nil {
			text := fidelity.Render(mock, haveMock, real, haveReal)
			var side []fidelity.NamedRun
			if haveMock {
				side = append(side, fidelity.NamedRun{Title: "bundled server", Run: mock})
			}
			if haveReal {
				title := "docker, official components"
				for n, v := range real.Components {
					if strings.HasPrefix(n, "execd image ") && strings.HasSuffix(v, "(stand-in)") {
						title = "docker, stand-ins"
					}
				}
				side = append(side, fidelity.NamedRun{Title: title + " (" + real.ServerVersion + ")", Run: real})
			}
			if haveUpstream {
				side = append(side, fidelity.NamedRun{Title: "docker, upstream-built (" + upstream.ServerVersion + ")", Run: upstream})
				text += fidelity.RenderComparison(side)
				// The recorder's account of each difference (runs/comparison-notes.md, written by hand).
				if notes, err := os.ReadFile(filepath.Join(*dir, "runs", "comparison-notes.md")); err == nil {
					text += "\n" + strings.TrimSpace(string(notes)) + "\n"
				}
			}
			if haveUpgrade {
				text += fidelity.RenderUpgrade(upgrade)
			}
			// The docker calibration's recorded result (runs/docker-calibration-notes.md, written by hand
			// from TestDockerCalibration's run; docs/docker.md "The docker calibration test").
			if notes, err := os.ReadFile(filepath.Join(*dir, "runs", "docker-calibration-notes.md")); err == nil {
				text += "\n" + strings.TrimSpace(string(notes)) + "\n"
			}
			out := filepath.Join(*dir, "FIDELITY.md")
			err = os.WriteFile(out, []byte(text), 0o644)
			if err == nil {
				fmt.Fprintf(stdout, "wrote %s\n", out)
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "acceptance fidelity: %v\n", err)
		return 2
	}
	return 0
}
