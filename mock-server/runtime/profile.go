package runtime

import (
	"fmt"
	"strings"
)

// pythonEnv is what the python:3.x images set, plus what the host profile needs:
// Debian's python refuses `pip install` outside a venv without
// PIP_BREAK_SYSTEM_PACKAGES, and matplotlib must not look for a display.
var pythonEnv = map[string]string{
	"PIP_BREAK_SYSTEM_PACKAGES": "1",
	"PYTHONUNBUFFERED":          "1",
	"MPLBACKEND":                "Agg",
	"PYTHON_VERSION":            "3.11",
}

// ProfileFor maps an image reference to a host profile. The registry host,
// the "library/" namespace, the tag and the digest are tolerated:
// python, python:3.12, docker.io/library/python:3.11-slim → python;
// debian, ubuntu, bash, busybox-like shells → debian. Anything else is
// ErrUnknownImage (the lifecycle layer reports it as an image pull failure).
func ProfileFor(image string) (Profile, error) {
	ref := strings.TrimSpace(image)
	if ref == "" {
		return Profile{}, ErrUnknownImage{Image: image}
	}
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	name, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	name = strings.ToLower(name)
	parts := strings.Split(name, "/")
	// Drop a registry host (contains a dot or a port, or is localhost).
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		parts = parts[1:]
	}
	if len(parts) > 1 && parts[0] == "library" {
		parts = parts[1:]
	}
	repo := strings.Join(parts, "/")
	switch repo {
	case "python":
		if tag == "" || tag == "latest" || strings.HasPrefix(tag, "3") || strings.HasPrefix(tag, "slim") ||
			strings.HasPrefix(tag, "bookworm") || strings.HasPrefix(tag, "bullseye") {
			return Profile{Name: "python", Env: copyEnv(pythonEnv)}, nil
		}
	case "opensandbox/code-interpreter":
		return Profile{Name: "python", Env: copyEnv(pythonEnv), CodeInterpreter: true}, nil
	case "debian", "ubuntu", "bash", "buildpack-deps", "busybox":
		return Profile{Name: "debian", Env: map[string]string{}}, nil
	}
	return Profile{}, fmt.Errorf("resolve image %q: %w", image, ErrUnknownImage{Image: image})
}

func copyEnv(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
