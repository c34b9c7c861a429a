package mockserver

import (
	"fmt"
	"regexp"
	goruntime "runtime"
	"sort"
	"strings"
)

// minMemoryBytes is Docker's smallest accepted memory limit (6 MiB).
const minMemoryBytes = 6 << 20

// checkRequestValues rejects, as 400 SANDBOX::INVALID_PARAMETER, values no
// container could be started with: an env name that is empty or holds "=" or
// a NUL byte, a NUL byte in an env value or in the entrypoint, a memory limit
// below Docker's 6 MiB minimum, more CPUs than this host has. (Values that
// do not parse at all are ignored, as documented.)
func checkRequestValues(req *createRequest) (string, string) {
	const code = "SANDBOX::INVALID_PARAMETER"
	names := make([]string, 0, len(req.Env))
	for k := range req.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return code, fmt.Sprintf("Invalid env name %q: a name must be non-empty and contain neither '=' nor NUL.", k)
		}
		if strings.ContainsRune(req.Env[k], 0) {
			return code, fmt.Sprintf("Invalid env value for %q: it contains a NUL byte.", k)
		}
	}
	for i, a := range req.Entrypoint {
		if strings.ContainsRune(a, 0) {
			return code, fmt.Sprintf("Invalid entrypoint[%d]: it contains a NUL byte.", i)
		}
	}
	if v, ok := req.ResourceLimits["memory"]; ok {
		if n := parseMemory(v); n > 0 && n < minMemoryBytes {
			return code, fmt.Sprintf("Invalid resourceLimits.memory: %q; the minimum memory limit is 6Mi.", preview(v))
		}
	}
	if v, ok := req.ResourceLimits["cpu"]; ok {
		if n := parseCPU(v); n > int64(goruntime.NumCPU())*1000 {
			return code, fmt.Sprintf("Invalid resourceLimits.cpu: %q; the range of CPUs is from 0.01 to %d, as there are only %d CPUs available.",
				preview(v), goruntime.NumCPU(), goruntime.NumCPU())
		}
	}
	return "", ""
}

func preview(v string) string {
	if len(v) > 80 {
		return v[:80] + "…"
	}
	return v
}

var hostPathRE = regexp.MustCompile(`(/[A-Za-z0-9._@%+=:,-]+){2,}`)

// hideHostPaths keeps host paths (state dir, cgroup files) out of messages
// sent to clients; the server log has the full text.
func hideHostPaths(msg string) string {
	return hostPathRE.ReplaceAllString(msg, "<host path>")
}
