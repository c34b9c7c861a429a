//go:build linux

package runtime_test

import (
	"os"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/agent"
)

func TestMain(m *testing.M) {
	agent.MainIfAgent() // this test binary is also the in-sandbox agent
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper())
	}
	os.Exit(m.Run())
}
