package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

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
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	for name, bundle := range map[string]string{"mock": *recMock, "docker": *recDocker} {
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
		if want := map[string]string{"mock": "mock", "docker": "real"}[name]; r.TargetKind != want {
			fmt.Fprintf(stderr, "acceptance fidelity: %s is a %s run, not %s\n", bundle, r.TargetKind, name)
			return 2
		}
		if err := fidelity.Save(*dir, name, r); err != nil {
			fmt.Fprintf(stderr, "acceptance fidelity: %v\n", err)
			return 2
		}
		fmt.Fprintf(stdout, "recorded %s as runs/%s.json\n", bundle, name)
	}
	mock, haveMock, err := fidelity.Load(*dir, "mock")
	if err == nil {
		var real fidelity.Run
		var haveReal bool
		real, haveReal, err = fidelity.Load(*dir, "docker")
		if err == nil {
			out := filepath.Join(*dir, "FIDELITY.md")
			err = os.WriteFile(out, []byte(fidelity.Render(mock, haveMock, real, haveReal)), 0o644)
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
