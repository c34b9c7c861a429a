package dockertarget

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"
)

// PinInfo says how a control-plane version's requirements were had.
type PinInfo struct {
	Version   string
	Committed bool   // embedded from harness/dockertarget/requirements/
	File      string // the requirements file (the cache's, when resolved at run time)
	SHA256    string // of the requirements file's content
	// Requirements is the file's content (pip --require-hashes input).
	Requirements []byte `json:"-"`
}

// Describe is the report's sentence about the pin.
func (p PinInfo) Describe() string {
	if p.Committed {
		return "pinned with hashes (committed: harness/dockertarget/requirements/opensandbox-server-" + p.Version + ".txt, sha256 " + p.SHA256[:16] + ")"
	}
	return "pinned with hashes at run time, NOT committed (" + p.File + ", sha256 " + p.SHA256[:16] + "; commit it with .ci/docker-pin-server.sh " + p.Version + ")"
}

var versionRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*([a-z0-9.+-]*)$`)

// ValidVersion: v looks like a version (checked before it reaches pip).
func ValidVersion(v string) bool { return versionRe.MatchString(v) }

// ResolvePin returns a version's pinned requirements: the committed file
// when there is one, else the run-time pin in cacheDir/pins/ (resolved once
// with .ci/docker-pin-server.sh against PyPI, hashes included, and reused
// afterwards). A version PyPI does not have fails here, before anything starts.
func ResolvePin(ctx context.Context, repoDir, cacheDir, version string, log io.Writer) (PinInfo, error) {
	if log == nil {
		log = io.Discard
	}
	if b, err := Requirements(version); err == nil {
		return PinInfo{Version: version, Committed: true, File: "harness/dockertarget/requirements/opensandbox-server-" + version + ".txt", SHA256: sum(b), Requirements: b}, nil
	}
	if !versionRe.MatchString(version) {
		return PinInfo{}, fmt.Errorf("--server-version %q is not a version", version)
	}
	file := filepath.Join(cacheDir, "pins", "opensandbox-server-"+version+".txt")
	if b, err := os.ReadFile(file); err == nil && len(b) > 0 {
		fmt.Fprintf(log, "docker target: opensandbox-server==%s is not pinned in the repository; using the run-time pin %s (not committed)\n", version, file)
		return PinInfo{Version: version, File: file, SHA256: sum(b), Requirements: b}, nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return PinInfo{}, err
	}
	fmt.Fprintf(log, "docker target: opensandbox-server==%s is not pinned in the repository: resolving it with hashes now into %s (not committed; .ci/docker-pin-server.sh %s commits a pin)\n", version, file, version)
	cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	// Written under a name of this process's, then renamed: the cache is the
	// machine's, and another checkout may resolve the same version now.
	tmp := fmt.Sprintf("%s.tmp-%d", file, os.Getpid())
	cmd := exec.CommandContext(cctx, "bash", filepath.Join(repoDir, ".ci", "docker-pin-server.sh"), version, tmp)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		_ = os.Remove(tmp)
		return PinInfo{}, fmt.Errorf("resolving opensandbox-server==%s at run time failed (is it published on PyPI?): %w", version, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		_ = os.Remove(tmp)
		return PinInfo{}, err
	}
	b, err := os.ReadFile(file)
	if err != nil || len(b) == 0 {
		return PinInfo{}, fmt.Errorf("resolving opensandbox-server==%s wrote no requirements", version)
	}
	return PinInfo{Version: version, File: file, SHA256: sum(b), Requirements: b}, nil
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
