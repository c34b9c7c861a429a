package mockserver

import (
	"encoding/json"
	"errors"
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
// resolved). pvc volumes are named volumes under Config.VolumeRoot
// (namedvolumes.go), as the real Docker runtime's Docker named volumes. Every
// mount is made from a descriptor opened here, never by resolving the path
// again. ossfs answers 400 VOLUME::UNSUPPORTED_BACKEND (a deviation: there is
// no OSSFS here).

type volumeSpec struct {
	Name      string                 `json:"name"`
	MountPath string                 `json:"mountPath"`
	ReadOnly  bool                   `json:"readOnly"`
	SubPath   *string                `json:"subPath"`
	Host      *struct{ Path string } `json:"host"`
	PVC       *pvcSpec               `json:"pvc"`
	OSSFS     json.RawMessage        `json:"ossfs"`
}

var volumeNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// reservedMountPaths are where the runtime mounts what the sandbox runs on.
var reservedMountPaths = []string{"/", "/proc", "/dev", "/.osb", "/run/osb", "/usr", "/etc"}

// checkVolumes validates req.Volumes and returns the mounts to make (each
// with an open File the caller closes once the sandbox is created) and the
// named-volume claims (released when the sandbox is gone or its create
// fails), or a (status, code, message) error as the real server would answer.
func (s *Server) checkVolumes(req *createRequest) (mounts []osbruntime.Mount, claims []*volumeClaim, status int, code, msg string) {
	const bad = 400
	defer func() {
		if code != "" {
			closeMounts(mounts)
			s.releaseVolumes(claims)
			mounts, claims = nil, nil
		}
	}()
	seen := map[string]bool{}
	for i, raw := range req.Volumes {
		var v volumeSpec
		if err := json.Unmarshal(raw, &v); err != nil {
			return mounts, claims, bad, "VOLUME::INVALID_BACKEND", fmt.Sprintf("volumes[%d] is not a valid volume object.", i)
		}
		if seen[v.Name] {
			return mounts, claims, bad, "VOLUME::DUPLICATE_NAME", fmt.Sprintf("Duplicate volume name '%s'. Each volume must have a unique name.", v.Name)
		}
		seen[v.Name] = true
		switch {
		case v.Name == "":
			return mounts, claims, bad, "VOLUME::INVALID_NAME", "Volume name cannot be empty."
		case len(v.Name) > 63:
			return mounts, claims, bad, "VOLUME::INVALID_NAME", fmt.Sprintf("Volume name '%s' exceeds maximum length of 63 characters.", v.Name)
		case !volumeNameRE.MatchString(v.Name):
			return mounts, claims, bad, "VOLUME::INVALID_NAME", fmt.Sprintf("Volume name '%s' is not a valid DNS label. Must be lowercase alphanumeric with optional hyphens.", v.Name)
		case v.MountPath == "":
			return mounts, claims, bad, "VOLUME::INVALID_MOUNT_PATH", "Mount path cannot be empty."
		case !strings.HasPrefix(v.MountPath, "/"):
			return mounts, claims, bad, "VOLUME::INVALID_MOUNT_PATH", fmt.Sprintf("Mount path '%s' must be an absolute path starting with '/'.", v.MountPath)
		}
		mp := path.Clean(v.MountPath)
		for _, r := range reservedMountPaths {
			if mp == r || (r != "/" && strings.HasPrefix(mp, r+"/")) || strings.ContainsRune(mp, 0) {
				return mounts, claims, bad, "VOLUME::INVALID_MOUNT_PATH", fmt.Sprintf("Mount path '%s' is reserved by the sandbox runtime.", v.MountPath)
			}
		}
		sub := ""
		if v.SubPath != nil {
			sub = *v.SubPath
		}
		if strings.HasPrefix(sub, "/") {
			return mounts, claims, bad, "VOLUME::INVALID_SUB_PATH", fmt.Sprintf("SubPath '%s' must be a relative path, not absolute.", sub)
		}
		for _, part := range strings.Split(sub, "/") {
			if part == ".." {
				return mounts, claims, bad, "VOLUME::INVALID_SUB_PATH", fmt.Sprintf("SubPath '%s' contains path traversal '..' which is not allowed.", sub)
			}
		}
		if strings.ContainsRune(sub, 0) {
			return mounts, claims, bad, "VOLUME::INVALID_SUB_PATH", "SubPath must not contain a NUL byte."
		}
		backends := 0
		for _, b := range []bool{v.Host != nil, v.PVC != nil, !isNull(v.OSSFS)} {
			if b {
				backends++
			}
		}
		if backends != 1 {
			return mounts, claims, bad, "VOLUME::INVALID_BACKEND", fmt.Sprintf("Volume '%s' must specify exactly one backend (host, pvc, ossfs).", v.Name)
		}
		switch {
		case v.Host != nil:
			f, st, c, m := s.checkHostPath(v.Name, v.Host.Path, sub)
			if c != "" {
				return mounts, claims, st, c, m
			}
			mounts = append(mounts, osbruntime.Mount{Host: f.Name(), Path: mp, ReadOnly: v.ReadOnly, File: f})
		case v.PVC != nil:
			f, claim, st, c, m := s.acquirePVC(req.tenant, v, *v.PVC, sub)
			if c != "" {
				return mounts, claims, st, c, m
			}
			claims = append(claims, claim)
			mounts = append(mounts, osbruntime.Mount{Host: f.Name(), Path: mp, ReadOnly: v.ReadOnly, File: f})
		default:
			return mounts, claims, bad, "VOLUME::UNSUPPORTED_BACKEND", fmt.Sprintf("Volume '%s': ossfs volumes are not supported by the bundled server (there is no OSSFS here).", v.Name)
		}
	}
	return mounts, claims, 0, "", ""
}

// closeMounts closes the descriptors checkVolumes opened.
func closeMounts(mounts []osbruntime.Mount) {
	for _, m := range mounts {
		if m.File != nil {
			_ = m.File.Close()
		}
	}
}

// checkHostPath checks host(+sub) against the allow list lexically, then
// opens it beneath the allowed prefix it lies in (openat2 RESOLVE_BENEATH:
// a symbolic link leading out of the prefix is refused, and nothing is
// created outside it), creating missing directories as the real server does.
// Returns the open descriptor to bind.
func (s *Server) checkHostPath(name, host, sub string) (*os.File, int, string, string) {
	const bad = 400
	switch {
	case host == "":
		return nil, bad, "VOLUME::INVALID_HOST_PATH", "Host path cannot be empty."
	case !strings.HasPrefix(host, "/") || strings.ContainsRune(host, 0):
		return nil, bad, "VOLUME::INVALID_HOST_PATH", fmt.Sprintf("Host path '%s' must be an absolute path starting with '/'.", host)
	case strings.Contains(host, "/.."):
		return nil, bad, "VOLUME::INVALID_HOST_PATH", fmt.Sprintf("Host path '%s' contains path traversal component '..'.", host)
	case strings.Contains(host, "//") || (len(host) > 1 && strings.HasSuffix(host, "/")):
		return nil, bad, "VOLUME::INVALID_HOST_PATH", fmt.Sprintf("Host path '%s' is not normalized. Remove redundant slashes.", host)
	}
	allowed := s.cfg.AllowedHostPaths
	notAllowed := func(p string) (*os.File, int, string, string) {
		return nil, bad, "VOLUME::HOST_PATH_NOT_ALLOWED", fmt.Sprintf("Host path '%s' is not under any allowed prefix. Allowed prefixes: %v", p, allowed)
	}
	resolved := filepath.Join(host, sub)
	prefix := ""
	for _, pre := range allowed {
		pre = filepath.Clean(pre)
		if (resolved == pre || strings.HasPrefix(resolved, strings.TrimSuffix(pre, "/")+"/")) && len(pre) > len(prefix) {
			prefix = pre
		}
	}
	if prefix == "" {
		return notAllowed(resolved)
	}
	createFailed := func() (*os.File, int, string, string) {
		return nil, 500, "VOLUME::HOST_PATH_CREATE_FAILED", fmt.Sprintf("Volume '%s': could not ensure host path directory exists at '%s'.", name, resolved)
	}
	if err := os.MkdirAll(prefix, 0o755); err != nil { // the configured prefix itself
		return createFailed()
	}
	rel, err := filepath.Rel(prefix, resolved)
	if err != nil {
		return notAllowed(resolved)
	}
	f, err := osbruntime.OpenBeneath(prefix, filepath.ToSlash(rel), true)
	switch {
	case errors.Is(err, osbruntime.ErrEscapes):
		return notAllowed(resolved + " (a symbolic link leads out of " + prefix + ")")
	case errors.Is(err, osbruntime.ErrNotMountable):
		return nil, bad, "VOLUME::INVALID_HOST_PATH", fmt.Sprintf("Volume '%s': host path '%s' is neither a directory nor a regular file.", name, resolved)
	case err != nil:
		s.log.Warn("host volume", "path", resolved, "err", err)
		return createFailed()
	}
	return f, 0, "", ""
}
