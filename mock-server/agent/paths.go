package agent

import (
	"errors"
	"path"
	"path/filepath"
	"strings"
)

var errNUL = errors.New("path contains a NUL byte")

// resolve turns a client path into the path this process opens. Relative
// paths are relative to the workspace; ".." cannot climb above the sandbox
// root (it is lexically cleaned first), and inside a namespaced sandbox the
// root is "/" of the sandbox's own mount namespace, so symlinks can only
// reach the sandbox's view of the world.
func (a *Agent) resolve(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.ContainsRune(p, 0) {
		return "", errNUL
	}
	if !path.IsAbs(p) {
		p = path.Join(a.cfg.Workspace, p)
	}
	return a.hostPath(path.Clean(p)), nil
}

// hostPath maps a cleaned absolute sandbox path to this process's view.
func (a *Agent) hostPath(p string) string {
	if a.cfg.Root == "/" || a.cfg.Root == "" {
		return p
	}
	return filepath.Join(a.cfg.Root, p)
}

// clientPath maps back for responses.
func (a *Agent) clientPath(h string) string {
	if a.cfg.Root == "/" || a.cfg.Root == "" {
		return h
	}
	rel := strings.TrimPrefix(h, filepath.Clean(a.cfg.Root))
	if rel == "" {
		return "/"
	}
	return rel
}
