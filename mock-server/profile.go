package mockserver

import (
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

// DefaultProfileFor maps the images this host can stand in for: python:3.x
// (and plain python) → the host's Debian python3 with pandas/matplotlib;
// debian, ubuntu, bash → the same /usr without image-specific env. Registry
// prefixes (docker.io/library/) and digests are ignored. Anything else is an
// unknown image (runtime.ErrUnknownImage).
func DefaultProfileFor(image string) (runtime.Profile, error) {
	ref := strings.TrimSpace(strings.ToLower(image))
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	for _, p := range []string{"docker.io/library/", "docker.io/", "library/"} {
		ref = strings.TrimPrefix(ref, p)
	}
	name, tag, _ := strings.Cut(ref, ":")
	switch name {
	case "python":
		if tag == "" || tag == "latest" || tag == "3" || strings.HasPrefix(tag, "3.") || strings.HasPrefix(tag, "3-") {
			return runtime.Profile{Name: "python", Env: map[string]string{
				"LANG":             "C.UTF-8",
				"PYTHONUNBUFFERED": "1",
			}}, nil
		}
	case "debian", "ubuntu", "bash":
		return runtime.Profile{Name: name, Env: map[string]string{}}, nil
	}
	return runtime.Profile{}, runtime.ErrUnknownImage{Image: image}
}
