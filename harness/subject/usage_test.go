package subject

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A confined command's result carries its box's cgroup figures: the CPU
// of a setsid'd daemon it never waited for is in them (the rusage is not).
func TestRunConfinedRecordsCgroupUsage(t *testing.T) {
	s := confinedSpec(t, `setsid python3 burn.py </dev/null >/dev/null 2>&1 & i=0; while [ ! -e /tmp/burned ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; ls /tmp/burned`)
	burn := "import time, pathlib\nwhile time.process_time() < 0.5:\n    pass\npathlib.Path('/tmp/burned').touch()\nwhile True:\n    pass\n"
	require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "burn.py"), []byte(burn), 0o644))
	res := run(t, s)
	require.True(t, res.Succeeded(), "exit %d: %s", res.ExitCode, readFile(res.StderrPath))
	require.NotNil(t, res.Confinement)
	u := res.Confinement.Usage
	require.NotNil(t, u, "a box with a cgroup records its usage")
	assert.Empty(t, u.Missing)
	assert.GreaterOrEqual(t, u.CPUSeconds, 0.5)
	assert.Positive(t, u.PeakMemoryBytes)
	t.Logf("cgroup %.2f CPU-s, peak %d KiB; rusage %.2f CPU-s, peak RSS %d KiB", u.CPUSeconds, u.PeakMemoryBytes>>10, res.CPUSeconds, res.PeakRSSKiB)
}
