package compare

import (
	"regexp"
	"strings"
)

// Noise in evidence: fields whose values differ from run to run by nature,
// whatever the platform does (resource usage, uids, pids, timings). The
// upgrade check leaves them out of its evidence drift (Options.IgnoreNoise)
// so that what is left is what the platform answered.
var noiseKeys = map[string]bool{
	// resource usage
	"cpu_seconds": true, "peak_rss_kib": true, "peak_memory_bytes": true, "usage": true, "memory_bytes": true,
	// identities the harness allots per run
	"uid": true, "gid": true, "pid": true, "pids": true, "leftover": true, "pgid": true,
	// timings
	"duration": true, "duration_ms": true, "elapsed": true, "elapsed_ms": true, "seconds": true, "wall_clock_ms": true,
	"time": true, "started_at": true, "ended_at": true, "created_at": true, "deleted_at": true, "ended": true,
	"latency_ms": true,
}

// noiseKey: a key that is noise by name (noiseKeys, or any "*_ms" /
// "*_seconds" / "*_at" timing).
func noiseKey(k string) bool {
	k = strings.ToLower(k)
	return noiseKeys[k] || strings.HasSuffix(k, "_ms") || strings.HasSuffix(k, "_seconds") || strings.HasSuffix(k, "_at")
}

// noiseText are the same facts inside free text (the confinement's
// "uid 610643 of its own", "pid 17975") and per-run random markers.
var noiseText = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`\b(uid|gid|pid|pgid) \d+`), "$1 <n>"},
	// the run marker the harness plants in a fixture's identifiers
	// ("T-1038-cmdd7347809d7b8ed4"): random per run
	{regexp.MustCompile(`\bcm[0-9a-f]{16}\b`), "cm<run-marker>"},
	{regexp.MustCompile(`\b\d+(\.\d+)? ?(ms|s|µs)\b`), "<n>$2"}, // timings in text (sizes and limits stay)
}

// jsonKeyLine is one line of pretty-printed JSON naming a key.
var jsonKeyLine = regexp.MustCompile(`^(\s*)"([^"]+)":\s*(.*?)\s*$`)

// Denoise removes noise from one entry's snapshot text (report.SnapshotText,
// already normalised, so its JSON may hold placeholders such as <n> and is
// read line by line): a key that is noise, at any depth of a pretty-printed
// JSON file, goes with its value (a nested object or array to its closing
// line), and uids, pids and timed quantities in text become placeholders.
func Denoise(snapshot string) string {
	var b strings.Builder
	lines := strings.SplitAfter(snapshot, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		m := jsonKeyLine.FindStringSubmatch(strings.TrimRight(line, "\n"))
		if m != nil && noiseKey(m[2]) {
			rest := strings.TrimSuffix(m[3], ",")
			if rest == "[" || rest == "{" {
				closing := m[1] + map[string]string{"[": "]", "{": "}"}[rest]
				for i+1 < len(lines) && !strings.HasPrefix(strings.TrimRight(lines[i+1], "\n"), closing) {
					i++
				}
				i++ // the closing line
			}
			continue
		}
		for _, n := range noiseText {
			line = n.re.ReplaceAllString(line, n.repl)
		}
		b.WriteString(line)
	}
	return b.String()
}
