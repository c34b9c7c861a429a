package mockserver

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	osbruntime "github.com/osb-capstone/acceptance/mock-server/runtime"
)

// Volumes (CONTRACT §1.4): host-path volumes are bind-mounted into the
// sandbox when the host path lies under one of Config.AllowedHostPaths (the
// real server's storage.allowed_host_paths; empty = no host path allowed),
// after the same checks as the real server (lexical, then with symbolic links
// resolved). pvc and ossfs backends answer 400 VOLUME::UNSUPPORTED_BACKEND
// (a deviation: Docker named volumes and OSSFS have no equivalent here).

type volumeSpec struct {
	Name      string                 `json:"name"`
	MountPath string                 `json:"mountPath"`
	ReadOnly  bool                   `json:"readOnly"`
	SubPath   *string                `json:"subPath"`
	Host      *struct{ Path string } `json:"host"`
	PVC       json.RawMessage        `json:"pvc"`
	OSSFS     json.RawMessage        `json:"ossfs"`
}

var volumeNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// reservedMountPaths are where the runtime mounts what the sandbox runs on.
var reservedMountPaths = []string{"/", "/proc", "/dev", "/.osb", "/run/osb", "/usr", "/etc"}

// checkVolumes validates req.Volumes and returns the mounts to make, or a
// (status, code, message) error as the real server would answer.
func (s *Server) checkVolumes(req *createRequest) ([]osbruntime.Mount, int, string, string) {
	const bad = 400
	var mounts []osbruntime.Mount
	seen := map[string]bool{}
	for i, raw := range req.Volumes {
		var v volumeSpec
		if err := json.Unmarshal(raw, &v); err != nil {
			return nil, bad, "VOLUME::INVALID_BACKEND", fmt.Sprintf("volumes[%d] is not a valid volume object.", i)
		}
		if seen[v.Name] {
			return nil, bad, "VOLUME::DUPLICATE_NAME", fmt.Sprintf("Duplicate volume name '%s'. Each volume must have a unique name.", v.Name)
		}
		seen[v.Name] = true
		switch {
		case v.Name == "":
			return nil, bad, "VOLUME::INVALID_NAME", "Volume name cannot be empty."
		case len(v.Name) > 63:
			return nil, bad, "VOLUME::INVALID_NAME", fmt.Sprintf("Volume name '%s' exceeds maximum length of 63 characters.", v.Name)
		case !volumeNameRE.MatchString(v.Name):
			return nil, bad, "VOLUME::INVALID_NAME", fmt.Sprintf("Volume name '%s' is not a valid DNS label. Must be lowercase alphanumeric with optional hyphens.", v.Name)
		case v.MountPath == "":
			return nil, bad, "VOLUME::INVALID_MOUNT_PATH", "Mount path cannot be empty."
		case !strings.HasPrefix(v.MountPath, "/"):
			return nil, bad, "VOLUME::INVALID_MOUNT_PATH", fmt.Sprintf("Mount path '%s' must be an absolute path starting with '/'.", v.MountPath)
		}
		mp := path.Clean(v.MountPath)
		for _, r := range reservedMountPaths {
			if mp == r || (r != "/" && strings.HasPrefix(mp, r+"/")) || strings.ContainsRune(mp, 0) {
				return nil, bad, "VOLUME::INVALID_MOUNT_PATH", fmt.Sprintf("Mount path '%s' is reserved by the sandbox runtime.", v.MountPath)
			}
		}
		sub := ""
		if v.SubPath != nil {
			sub = *v.SubPath
		}
		if strings.HasPrefix(sub, "/") {
			return nil, bad, "VOLUME::INVALID_SUB_PATH", fmt.Sprintf("SubPath '%s' must be a relative path, not absolute.", sub)
		}
		for _, part := range strings.Split(sub, "/") {
			if part == ".." {
				return nil, bad, "VOLUME::INVALID_SUB_PATH", fmt.Sprintf("SubPath '%s' contains path traversal '..' which is not allowed.", sub)
			}
		}
		backends := 0
		for _, b := range []bool{v.Host != nil, !isNull(v.PVC), !isNull(v.OSSFS)} {
			if b {
				backends++
			}
		}
		if backends != 1 {
			return nil, bad, "VOLUME::INVALID_BACKEND", fmt.Sprintf("Volume '%s' must specify exactly one backend (host, pvc, ossfs).", v.Name)
		}
		if v.Host == nil {
			return nil, bad, "VOLUME::UNSUPPORTED_BACKEND", fmt.Sprintf("Volume '%s': only host volumes are supported by the bundled server (pvc and ossfs are not).", v.Name)
		}
		host, status, code, msg := s.checkHostPath(v.Name, v.Host.Path, sub)
		if code != "" {
			return nil, status, code, msg
		}
		mounts = append(mounts, osbruntime.Mount{Host: host, Path: mp, ReadOnly: v.ReadOnly})
	}
	return mounts, 0, "", ""
}

// checkHostPath resolves host(+sub) and checks it against the allow list
// (lexically, then with symbolic links resolved); it creates a missing
// directory, as the real server does. Returns the canonical path to bind.
func (s *Server) checkHostPath(name, host, sub string) (string, int, string, string) {
	const bad = 400
	switch {
	case host == "":
		return "", bad, "VOLUME::INVALID_HOST_PATH", "Host path cannot be empty."
	case !strings.HasPrefix(host, "/") || strings.ContainsRune(host, 0):
		return "", bad, "VOLUME::INVALID_HOST_PATH", fmt.Sprintf("Host path '%s' must be an absolute path starting with '/'.", host)
	case strings.Contains(host, "/.."):
		return "", bad, "VOLUME::INVALID_HOST_PATH", fmt.Sprintf("Host path '%s' contains path traversal component '..'.", host)
	case strings.Contains(host, "//") || (len(host) > 1 && strings.HasSuffix(host, "/")):
		return "", bad, "VOLUME::INVALID_HOST_PATH", fmt.Sprintf("Host path '%s' is not normalized. Remove redundant slashes.", host)
	}
	allowed := s.cfg.AllowedHostPaths
	under := func(p string, prefixes []string) bool {
		for _, pre := range prefixes {
			pre = filepath.Clean(pre)
			if p == pre || strings.HasPrefix(p, strings.TrimSuffix(pre, "/")+"/") {
				return true
			}
		}
		return false
	}
	notAllowed := func(p string) (string, int, string, string) {
		return "", bad, "VOLUME::HOST_PATH_NOT_ALLOWED", fmt.Sprintf("Host path '%s' is not under any allowed prefix. Allowed prefixes: %v", p, allowed)
	}
	resolved := filepath.Join(host, sub)
	if !under(resolved, allowed) {
		return notAllowed(resolved)
	}
	if _, err := os.Stat(resolved); os.IsNotExist(err) {
		if err := os.MkdirAll(resolved, 0o755); err != nil {
			return "", 500, "VOLUME::HOST_PATH_CREATE_FAILED", fmt.Sprintf("Volume '%s': could not ensure host path directory exists at '%s'.", name, resolved)
		}
	}
	canonical, err := filepath.EvalSymlinks(resolved)
	if err != nil {
		return "", bad, "VOLUME::HOST_PATH_NOT_FOUND", fmt.Sprintf("Volume '%s': host path '%s' cannot be resolved.", name, resolved)
	}
	var canonPrefixes []string
	for _, p := range allowed {
		if c, err := filepath.EvalSymlinks(p); err == nil {
			canonPrefixes = append(canonPrefixes, c)
		}
	}
	if !under(canonical, canonPrefixes) {
		return notAllowed(canonical)
	}
	return canonical, 0, "", ""
}
