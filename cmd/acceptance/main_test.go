package main

import (
	"os"
	"testing"

	"github.com/osb-capstone/acceptance/harness/dockertarget/standin"
	"github.com/osb-capstone/acceptance/harness/report"
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
		case "harden-probe": // TestGraderMemoryClosedToItsUser
			if len(os.Args) > 2 && os.Args[2] == "on" {
				if err := hardenGrader(); err != nil {
					panic(err)
				}
			}
			os.Stdout.WriteString("ready\n")
			select {}
		case "reference", "serve-mock", "run", "grade":
			if hardened[os.Args[1]] { // as main does
				_ = hardenGrader()
			}
			os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
		}
	}
	// Journal keys of the runs the tests grade go to a directory of their
	// own, never the user's (report.DefaultJournalKeyDir).
	keys, err := os.MkdirTemp("", "acceptance-journal-keys-")
	if err != nil {
		panic(err)
	}
	if os.Getenv(report.EnvJournalKeys) == "" {
		os.Setenv(report.EnvJournalKeys, keys)
	}
	code := m.Run()
	os.RemoveAll(keys)
	os.Exit(code)
}
