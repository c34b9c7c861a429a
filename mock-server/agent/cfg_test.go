package agent

import "github.com/osb-capstone/acceptance/mock-server/runtime"

func agentCfg(root string) runtime.AgentConfig {
	return runtime.AgentConfig{Root: root, Workspace: "/workspace"}
}
