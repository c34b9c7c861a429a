package compare

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDenoise: the noise a real docker run's evidence carries (taken from
// the 0.2.3 → 1.1.1 check of 2026-12-01, whose drift flagged 7 of 7 entries
// on it) goes; what the platform answered stays.
func TestDenoise(t *testing.T) {
	run := func(cpu, rss, leftover, uid, marker, status string) string {
		return `=== evidence/subject-large/run.json
{
  "result": {
    "duration": <n>,
    "cpu_seconds": ` + cpu + `,
    "peak_rss_kib": ` + rss + `,
    "stdout_path": "<bundle>/evidence/subject-large/stdout.log",
    "home_dir": "/home/student",
    "leftover": [
      ` + leftover + `
    ],
    "group_gone": true,
    "confinement": {
      "mode": "confined",
      "uid": ` + uid + `,
      "enforced": [
        "uid ` + uid + ` of its own",
        "disk ≤ 1024 MiB"
      ],
      "usage": {
        "cpu_seconds": 0.934624058,
        "peak_memory_bytes": 14094336,
        "source": "cgroup v1"
      }
    }
  },
  "groups": {
    "T-1038-cm` + marker + `": 1
  },
  "delete_status": ` + status + `
}
=== evidence/M0/transcript.txt
DELETE /v1/sandboxes/<uuid> → ` + status + ` in 812ms
`
	}
	a := run("0.005977", "134528", "17975", "610643", "dd7347809d7b8ed4", "204")
	b := run("0.004689", "81064", "2192", "611110", "8fd299bed469d225", "204")
	assert.NotEqual(t, a, b)
	assert.Equal(t, Denoise(a), Denoise(b), "noise only")
	assert.Contains(t, Denoise(a), `"group_gone": true`)
	assert.Contains(t, Denoise(a), `"disk ≤ 1024 MiB"`, "a limit is not a timing")
	assert.NotContains(t, Denoise(a), "cpu_seconds")
	c := run("0.005977", "134528", "17975", "610643", "dd7347809d7b8ed4", "200")
	assert.NotEqual(t, Denoise(a), Denoise(c), "a changed status stays")
}

// TestProxyLatencies: create→ready (to the first answer saying Running),
// delete and command round trips, per sandbox and as bundle medians.
func TestProxyLatencies(t *testing.T) {
	dir := t.TempDir()
	rdir := filepath.Join(dir, "evidence", "subject-sales")
	require.NoError(t, os.MkdirAll(rdir, 0o755))
	life := `[
 {"time":"2026-12-02T08:00:00Z","ended":"2026-12-02T08:00:01.5Z","method":"POST","path":"/v1/sandboxes","status":202,"sandbox_id":"a","state":"Pending"},
 {"time":"2026-12-02T08:00:03Z","ended":"2026-12-02T08:00:03.5Z","method":"GET","path":"/v1/sandboxes/a","status":200,"sandbox_id":"a","state":"Running"},
 {"time":"2026-12-02T08:00:04Z","ended":"2026-12-02T08:00:05Z","method":"POST","path":"/v1/sandboxes","status":202,"sandbox_id":"b","state":"Running"},
 {"time":"2026-12-02T08:00:10Z","ended":"2026-12-02T08:00:10.25Z","method":"DELETE","path":"/v1/sandboxes/a","status":204,"sandbox_id":"a"},
 {"time":"2026-12-02T08:00:11Z","ended":"2026-12-02T08:00:11.75Z","method":"DELETE","path":"/v1/sandboxes/b","status":204,"sandbox_id":"b"},
 {"time":"2026-12-02T08:00:01Z","ended":"2026-12-02T08:00:01.1Z","method":"POST","path":"/v1/sandboxes","status":429}
]`
	ep := `[
 {"time":"2026-12-02T08:00:06Z","ended":"2026-12-02T08:00:08Z","kind":"endpoint","method":"POST","path":"/sandboxes/a/proxy/44772/command","status":200,"sandbox_id":"a"},
 {"time":"2026-12-02T08:00:08Z","ended":"2026-12-02T08:00:08.1Z","kind":"endpoint","method":"POST","path":"/sandboxes/a/proxy/44772/files/upload","status":200,"sandbox_id":"a"}
]`
	require.NoError(t, os.WriteFile(filepath.Join(rdir, proxyLifecycleFile), []byte(life), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(rdir, endpointCallsFile), []byte(ep), 0o644))
	got := ProxyLatencies(dir)
	assert.Equal(t, map[string]float64{
		"sales/sandbox1_create_ready_ms": 3500, // created at :00, Running first said at :03.5
		"sales/sandbox2_create_ready_ms": 1000,
		"sales/sandbox1_delete_ms":       250,
		"sales/sandbox2_delete_ms":       750,
		"sales/command1_roundtrip_ms":    2000,
		FigureCreateReady:                2250,
		FigureDelete:                     500,
		FigureCommand:                    2000,
	}, got)
	figs, _ := Figures(dir)
	assert.Equal(t, 2250.0, figs[FigureCreateReady], "acceptance diff compares them too")
}
