package agent

import "github.com/osb-capstone/acceptance/mock-server/runtime"

// hardenSelf puts the agent out of reach of sandbox code (see runtime.HardenAgent).
func hardenSelf() error { return runtime.HardenAgent() }
