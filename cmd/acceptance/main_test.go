package main

import (
	"os"
	"testing"

	"github.com/osb-capstone/acceptance/harness/dockertarget/standin"
	"github.com/osb-capstone/acceptance/mock-server/agent"
)

// TestMain lets the test binary stand in for the acceptance binary: the
// bundled server re-executes it as each sandbox's agent, and the subject
// runner executes it as `<binary> reference …` for the reference subject;
// the shard test runs it as `<binary> grade --shard K/N …`, one process a shard.
func TestMain(m *testing.M) {
	agent.MainIfAgent()
	standin.MainIf() // the docker target's stand-in images run this binary too
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "reference", "serve-mock", "run", "grade":
			os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
		}
	}
	os.Exit(m.Run())
}
