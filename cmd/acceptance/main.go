// Command acceptance is the OpenSandbox capstone acceptance and fault-drill suite.
//
//	acceptance run         grade a subject (the reference pipeline or a submission) against a server
//	acceptance grade       grade submission directories (capstone.yaml), one bundle each, plus a class summary
//	acceptance class       merge the bundles of several grading runs (e.g. shards) into one class summary
//	acceptance serve-mock  run the bundled OpenSandbox-compatible server in the foreground
//	acceptance reference   run the reference capstone pipeline once
//	acceptance review      record a reviewer's judgement; the final score out of 100
//	acceptance diff        compare two report bundles (the upgrade check)
//	acceptance upgrade-check  grade on two server versions on Docker, interleaved, and compare
//	acceptance render      re-render a bundle's reports from its journal
//	acceptance fidelity    regenerate the fidelity ledger (harness/fidelity)
//	acceptance version     print versions
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/osb-capstone/acceptance/cmd/acceptance/reference"
	"github.com/osb-capstone/acceptance/harness/dockertarget/standin"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
	"github.com/osb-capstone/acceptance/mock-server/agent"
)

// version is stamped by the build; "dev" otherwise.
var version = "dev"

func main() {
	// The bundled server re-executes this binary inside each sandbox as its agent (execd + egress sidecar).
	agent.MainIfAgent()
	// The docker target's execd and egress stand-in images run this binary too.
	standin.MainIf()
	if len(os.Args) > 1 && hardened[os.Args[1]] {
		if err := hardenGrader(); err != nil {
			fmt.Fprintf(os.Stderr, "acceptance: warning: cannot make the grader non-dumpable (its memory stays readable by processes of its user): %v\n", err)
		}
	}
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "run":
		return runMain(args[1:], stdout, stderr)
	case "grade":
		return gradeMain(args[1:], stdout, stderr)
	case "class":
		return classMain(args[1:], stdout, stderr)
	case "serve-mock":
		return mockserver.ServeMain(args[1:], stdout, stderr)
	case "reference":
		return reference.Main(args[1:], stdout, stderr)
	case "review":
		return reviewMain(args[1:], os.Stdin, stdout, stderr)
	case "diff":
		return diffMain(args[1:], stdout, stderr)
	case "upgrade-check":
		return upgradeCheckMain(args[1:], stdout, stderr)
	case "render":
		return renderMain(args[1:], stdout, stderr)
	case "fidelity":
		return fidelityMain(args[1:], stdout, stderr)
	case "confine-probe":
		return confineProbeMain(args[1:], stdout, stderr)
	case "rubric":
		return rubricMain(args[1:], stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "acceptance %s (OpenSandbox contract 1.1.1)\n", version)
		return 0
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "acceptance: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: acceptance <command> [flags]

commands:
  run         grade a subject against a server and write a report bundle
  grade       grade submission directories (capstone.yaml at their root): one bundle each, plus a class summary
  class       merge the bundles of several grading runs (e.g. --shard K/N) into one class summary
  serve-mock  run the bundled OpenSandbox-compatible server in the foreground
  reference   run the reference capstone pipeline once
  review      record a reviewer's judgement of a bundle; prints the final score out of 100
  diff        compare two bundles; exit 1 on a regression (the upgrade check)
  upgrade-check  grade on two server versions on Docker (interleaved rounds) and compare; exit 1 on a regression
  render      re-render a bundle's reports from its results.jsonl (e.g. after a killed run)
  fidelity    record runs into the fidelity ledger and regenerate harness/fidelity/FIDELITY.md
  rubric      print the rubric index: each entry's scenarios and the Go functions of their steps
  version     print the version

Run "acceptance <command> -h" for a command's flags.
`)
}
