package fidelity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSplitOrigin(t *testing.T) {
	for v, want := range map[string][2]string{
		"sha256:aa (upstream-built from commit 3bb6fad3d8b6)": {"sha256:aa", "upstream-built from commit 3bb6fad3d8b6"},
		"sha256:bb (from the engine)":                         {"sha256:bb", "from the engine"},
		"sha256:cc (stand-in)":                                {"sha256:cc", "stand-in"},
		"20.10.24+dfsg1":                                      {"20.10.24+dfsg1", "official"},
	} {
		id, o := splitOrigin(v)
		if id != want[0] || o != want[1] {
			t.Errorf("%q: %q %q", v, id, o)
		}
	}
	// The real run's component table shows each label, not "official" for all but stand-ins.
	md := Render(Run{}, false, Run{TargetKind: "real", Components: map[string]string{"execd image x": "sha256:aa (upstream-built from commit 3bb6fad3d8b6)"}}, true)
	if !strings.Contains(md, "| execd image x | `sha256:aa` | upstream-built from commit 3bb6fad3d8b6 |") {
		t.Error(md)
	}
}

func TestRenderComparisonMarksDifferences(t *testing.T) {
	mk := func(execd string, d2 string) Run {
		return Run{Date: time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC), ServerVersion: "1.1.1",
			Components: map[string]string{"execd image " + execd: "sha256:0123456789abcdef (x)"},
			Entries:    []Entry{{ID: "M1", Kind: "milestone", Verdict: "passed"}, {ID: "D2", Kind: "drill", Verdict: d2}}}
	}
	md := RenderComparison([]NamedRun{{"bundled", mk("a", "passed")}, {"stand-ins", mk("b", "passed")}, {"upstream", mk("c", "failed")}})
	for _, want := range []string{"| milestone `M1` | passed | passed | passed | yes |", "| drill `D2` | passed | passed | failed | **no** |",
		"1 of 2 entries differ", "c `0123456789ab` (x)"} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
	if RenderComparison([]NamedRun{{"one", mk("a", "passed")}}) != "" {
		t.Error("one run is no comparison")
	}
}

func TestUpgradeRecordAndRender(t *testing.T) {
	dir := t.TempDir()
	js := `{"From":"0.2.3","To":"1.1.1","Rounds":2,"Tags":"@milestone:M0","VerdictsFrom":["passed","passed"],"VerdictsTo":["passed","passed"],
	"EntryChanges":[{"ID":"M2","Old":"passed","New":"failed"}],"Drift":[{"ID":"M0","Diff":"x"}],"TimingJudged":true,"Regressions":["M2 passed → failed"],"Exit":1,
	"Figures":[{"name":"a_ms","unit":"ms","from_median":1,"to_median":1,"within_the_noise":true},{"name":"b_ms","unit":"ms","from_median":900,"to_median":300,"improvement":true}]}`
	if err := os.WriteFile(filepath.Join(dir, "upgrade-check.json"), []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := UpgradeFromCheck(dir, "M2 failed because …")
	if err != nil {
		t.Fatal(err)
	}
	ledger := t.TempDir()
	if err := SaveUpgrade(ledger, u); err != nil {
		t.Fatal(err)
	}
	got, ok, err := LoadUpgrade(ledger)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	md := RenderUpgrade(got)
	for _, want := range []string{"opensandbox-server 0.2.3 → 1.1.1", "M2: passed → failed", "evidence drift: M0", "2 figures compared", "1 within the noise",
		"b_ms 900 → 300 ms", "M2 failed because …", "exit 1"} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
}
