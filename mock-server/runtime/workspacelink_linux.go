package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
)

// In insecure mode a sandbox has no mount namespace of its own, so no
// /workspace: its workspace is a directory under the server's state, and a
// command that names /workspace literally (the course's `cd /workspace &&
// python3 analyze.py`, or a script opening /workspace/input.csv) found
// nothing there, so an honest submission failed M2 wherever namespaces are
// missing (Gradescope's unprivileged container: every analysis step exited 1
// in 3 ms, measured 2026-12-02).
//
// The workspace link gives every sandbox its own /workspace through one
// host path: /workspace is a symlink to /proc/self/fd/WorkspaceFD, and every
// process the agent starts (commands, sessions, the entrypoint, code
// kernels) gets its own sandbox's workspace directory open at that
// descriptor. The kernel resolves /proc/self in the process that names the
// path, so each sees its own sandbox's directory, and a process of another
// uid cannot follow another's descriptor (/proc/<pid>/fd needs ptrace
// rights). What it does not cover: a child that closes its inherited
// descriptors (Python's subprocess does by default) sees no /workspace,
// though its working directory, inherited, is still the right one.

// WorkspaceFD is the descriptor an insecure sandbox's processes hold their
// workspace directory at (high, out of the way of a shell's own redirections
// such as `exec 9>lock`).
const WorkspaceFD = 63

// workspaceLinkTarget is what /workspace points at.
var workspaceLinkTarget = "/proc/self/fd/" + strconv.Itoa(WorkspaceFD)

// ensureWorkspaceLink makes path (/workspace) the workspace link, or says
// why it cannot: an existing symlink to the same target is kept; anything
// else at path is left alone.
func ensureWorkspaceLink(path string) error {
	if t, err := os.Readlink(path); err == nil {
		if t == workspaceLinkTarget {
			return nil
		}
		return fmt.Errorf("%s is a symlink to %s, not %s: left alone", path, t, workspaceLinkTarget)
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%s exists and is not the workspace link: left alone", path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Symlink(workspaceLinkTarget, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if t, err := os.Readlink(path); err != nil || t != workspaceLinkTarget {
		return fmt.Errorf("%s is not the workspace link after making it", path)
	}
	return nil
}
