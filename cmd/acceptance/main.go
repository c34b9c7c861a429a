// Command acceptance is the OpenSandbox capstone acceptance and fault-drill suite.
//
//	acceptance run         grade a subject (the reference pipeline or a submission) against a server
//	acceptance grade       grade submission directories (capstone.yaml), one bundle each, plus a class summary
//	acceptance serve-mock  run the bundled OpenSandbox-compatible server in the foreground
//	acceptance reference   run the reference capstone pipeline once
//	acceptance version     print versions
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/osb-capstone/acceptance/cmd/acceptance/reference"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
	"github.com/osb-capstone/acceptance/mock-server/agent"
)

// version is stamped by the build; "dev" otherwise.
var version = "dev"

func main() {
	// The bundled server re-executes this binary inside each sandbox as its agent (execd + egress sidecar).
	agent.MainIfAgent()
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
	case "serve-mock":
		return mockserver.ServeMain(args[1:], stdout, stderr)
	case "reference":
		return reference.Main(args[1:], stdout, stderr)
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
  serve-mock  run the bundled OpenSandbox-compatible server in the foreground
  reference   run the reference capstone pipeline once
  version     print the version

Run "acceptance <command> -h" for a command's flags.
`)
}
