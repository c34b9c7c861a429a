package recompute

import (
	"encoding/json"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/fixtures"
)

// pandasOracle computes, with pandas itself, the metrics a correct subject
// would claim (reading each file with its real delimiter and encoding).
const pandasOracle = `
import json, re, sys
import pandas as pd
path, sep, enc = sys.argv[1], sys.argv[2], sys.argv[3]
df = pd.read_csv(path, sep=sep, encoding=enc)
norm = lambda s: re.sub(r'[\W_]+', '_', str(s).lower()).strip('_')
m = {"rows": len(df), "columns": len(df.columns), "missing_total": int(df.isna().sum().sum())}
num = [c for c in df.select_dtypes("number").columns if df[c].dtype != bool]
for c in df.columns:
    m["missing_" + norm(c)] = int(df[c].isna().sum())
    m["count_" + norm(c)] = int(df[c].count())
for c in num:
    s = df[c]
    for agg in ("sum", "mean", "min", "max", "std"):
        v = float(getattr(s, agg)())
        if v == v:
            m[agg + "_" + norm(c)] = v
for g in df.columns:
    if g in num or df[g].nunique() > 50:
        continue
    grp = df.groupby(g)
    for val, n in grp.size().items():
        m["rows_by_%s_%s" % (norm(g), norm(val))] = int(n)
    for c in num:
        for val, v in grp[c].sum().items():
            m["sum_%s_by_%s_%s" % (norm(c), norm(g), norm(val))] = float(v)
        for val, v in grp[c].mean().items():
            if v == v:
                m["mean_%s_by_%s_%s" % (norm(c), norm(g), norm(val))] = float(v)
print(json.dumps(m))
`

func pandasPython(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the comparison with pandas imports pandas per fixture (about 40 s); make test runs it")
	}
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import pandas").Run() == nil {
			return py
		}
	}
	t.Skip("no python3 with pandas importable (tried python3, /usr/bin/python3); install python3-pandas")
	return ""
}

// The recomputation agrees with pandas on every fixture a correct subject
// can analyse: rows, columns, missing values, numeric aggregates, groups.
func TestAgreesWithPandas(t *testing.T) {
	t.Parallel()
	py := pandasPython(t)
	m, err := fixtures.Load()
	require.NoError(t, err)
	for _, e := range m.Fixtures {
		if e.Expect != fixtures.ExpectOK {
			continue
		}
		t.Run(e.File, func(t *testing.T) {
			path := fixture(t, e.File)
			enc := map[string]string{"iso-8859-1": "latin-1", "windows-1252": "cp1252"}[e.Encoding]
			if enc == "" {
				enc = e.Encoding
			}
			out, err := exec.Command(py, "-c", pandasOracle, path, e.Delimiter, enc).Output()
			require.NoError(t, err)
			var want map[string]float64
			require.NoError(t, json.Unmarshal(out, &want))
			require.NotEmpty(t, want)
			st, err := File(path)
			require.NoError(t, err)
			for _, c := range st.Compare(want) {
				assert.True(t, c.Match, "%s: %s (pandas %v, recomputed %v) %s", e.File, c.Name, c.Claimed, c.Recomputed, c.Hint)
			}
		})
	}
}
