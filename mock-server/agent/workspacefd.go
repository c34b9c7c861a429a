package agent

import (
	"log"
	"os"
	"os/exec"
	"sync"
)

// The workspace link (mock-server/runtime/workspacelink_linux.go): in
// insecure mode, /workspace is a symlink to /proc/self/fd/N, and every
// process the agent starts holds its sandbox's workspace directory open at
// descriptor N (AgentConfig.WorkspaceFD), so /workspace is that sandbox's
// own in each of its processes.

// workspaceDir is the sandbox's workspace directory, opened once (nil: no
// workspace descriptor is given, or it could not be opened).
func (a *Agent) workspaceDir() *os.File {
	a.wsOnce.Do(func() {
		if a.cfg.WorkspaceFD < 3 {
			return
		}
		f, err := os.Open(a.hostPath(a.cfg.Workspace))
		if err != nil {
			log.Printf("workspace descriptor: %v (commands naming %s will not find it)", err, a.cfg.Workspace)
			return
		}
		a.wsDir = f
	})
	return a.wsDir
}

// holdWorkspace gives cmd the workspace directory at WorkspaceFD, after the
// descriptors it already passes (ExtraFiles[i] is descriptor 3+i; the gap is
// closed in the child).
func (a *Agent) holdWorkspace(cmd *exec.Cmd) {
	f := a.workspaceDir()
	if f == nil {
		return
	}
	at := a.cfg.WorkspaceFD - 3
	if len(cmd.ExtraFiles) > at {
		log.Printf("workspace descriptor %d is taken by the command's own descriptors", a.cfg.WorkspaceFD)
		return
	}
	for len(cmd.ExtraFiles) < at {
		cmd.ExtraFiles = append(cmd.ExtraFiles, nil)
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
}

// wsState is the Agent's workspace descriptor state.
type wsState struct {
	wsOnce sync.Once
	wsDir  *os.File
}
