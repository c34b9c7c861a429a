package upgradecheck

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/report/compare"
)

// TestCheckRunsEachSideWithItsOwnImages: the check's runs (a stand-in for
// `acceptance run` that records its arguments and copies a prepared
// bundle) go in ABBA order, each version with its own --execd-image and
// --egress-image, and the report says each side ran its own data plane.
func TestCheckRunsEachSideWithItsOwnImages(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("not measured: no sh")
	}
	tmpl := t.TempDir()
	for v, f := range map[string]fakeRun{"0.2.3": base(1, 1200), "1.1.1": base(2, 1300)} {
		if v == "1.1.1" {
			f.execdID, f.egressID = "sha256:execd-v1.1.0", "sha256:egress-v1.1.7"
		}
		require.NoError(t, os.CopyFS(filepath.Join(tmpl, v), os.DirFS(writeFakeRun(t, f))))
	}
	argvLog := filepath.Join(t.TempDir(), "argv.log")
	self := filepath.Join(t.TempDir(), "acceptance")
	script := `#!/bin/sh
echo "$*" >> '` + argvLog + `'
v=; out=
while [ $# -gt 0 ]; do
  case "$1" in
    --server-version) v=$2; shift ;;
    --out) out=$2; shift ;;
  esac
  shift
done
mkdir -p "$out" && cp -R '` + tmpl + `'/"$v"/. "$out"/
`
	require.NoError(t, os.WriteFile(self, []byte(script), 0o755))
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := Check(context.Background(), Config{From: "0.2.3", To: "1.1.1", Rounds: 2, Subject: "reference", Out: out, Seed: 7, Self: self,
		Options:    compare.DefaultOptions,
		FromImages: Images{Execd: "opensandbox/execd:v1.0.22", Egress: "opensandbox/egress:v1.1.7"},
		ToImages:   Images{Execd: "up/execd:v1.1.0", Egress: "up/egress:v1.1.7"}}, &stdout, &stderr)
	assert.Equal(t, 0, code, "%s%s", stdout.String(), stderr.String())
	b, err := os.ReadFile(argvLog)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 4)
	for i, want := range []string{"0.2.3", "1.1.1", "1.1.1", "0.2.3"} { // ABBA
		assert.Contains(t, lines[i], "--server-version "+want)
		if want == "0.2.3" {
			assert.Contains(t, lines[i], "--execd-image opensandbox/execd:v1.0.22 --egress-image opensandbox/egress:v1.1.7")
		} else {
			assert.Contains(t, lines[i], "--execd-image up/execd:v1.1.0 --egress-image up/egress:v1.1.7")
		}
	}
	md := stdout.String()
	assert.Contains(t, md, "in ABBA order (A B B A; A = 0.2.3)")
	assert.Contains(t, md, "Data plane: each side with its own data plane.")
	assert.Contains(t, md, "judged ABBA")
	assert.Contains(t, md, "Contract: no change")
	assert.Contains(t, md, "Evidence: no drift")
	// Judged again from its directory, the same.
	var again bytes.Buffer
	assert.Equal(t, 0, Rejudge(out, compare.DefaultOptions, &again, &stderr))
	assert.Equal(t, md, again.String())
}
