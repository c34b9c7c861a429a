package steps

import (
	"encoding/json"
	"strings"
)

// deniedLookup is a denial an egress sidecar logged.
type deniedLookup struct{ host, line string }

// deniedLookups are the denials a sidecar's log records: a JSON line whose
// msg is `[dns] denied by policy (remote=… question="host")`, the form
// upstream's DNS proxy logs them in at later commits (the build measured
// here, 3bb6fad3d8b6, logs none; the stand-in logs none, as that build).
func deniedLookups(log string) []deniedLookup {
	var out []deniedLookup
	for _, line := range strings.Split(log, "\n") {
		i := strings.IndexByte(line, '{')
		if i < 0 || !strings.Contains(line, "denied by policy") {
			continue
		}
		var ev struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal([]byte(line[i:]), &ev) != nil || !strings.HasPrefix(ev.Msg, "[dns] denied by policy") {
			continue
		}
		_, q, ok := strings.Cut(ev.Msg, `question="`)
		if !ok {
			continue
		}
		host, _, ok := strings.Cut(q, `"`)
		if ok && host != "" {
			out = append(out, deniedLookup{host: strings.TrimSuffix(host, "."), line: ev.Msg})
		}
	}
	return out
}
