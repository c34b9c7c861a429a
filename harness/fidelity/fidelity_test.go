package fidelity

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFromReportAndRender(t *testing.T) {
	dir := t.TempDir()
	doc := `{"target":"docker","target_kind":"real","subject":"reference","tags":"@milestone:M0",
	 "versions":{"acceptance":"dev","component: control plane":"opensandbox-server==1.1.1 (official)","component: execd image x":"sha256:abc (stand-in)"},
	 "started_at":"2026-11-30T15:00:00Z",
	 "criteria":[{"id":"network","verdict":"not_measured","category":"unsupported_by_target","reason":"the target has no upstream"}],
	 "milestones":[{"id":"M0","verdict":"passed"},{"id":"M1","verdict":"passed","stand_ins":["execd","sandbox"]}],"drills":[]}`
	if err := os.WriteFile(filepath.Join(dir, "report.json"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	real, err := FromReport(dir)
	if err != nil {
		t.Fatal(err)
	}
	if real.ServerVersion != "1.1.1" || len(real.Entries) != 3 || real.Entries[0].ID != "network" {
		t.Fatalf("distilled %+v", real)
	}
	mock := Run{Target: "mock", TargetKind: "mock", Date: time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), ServerVersion: "bundled dev",
		Entries: []Entry{{ID: "network", Kind: "criterion", Verdict: "passed"}, {ID: "M0", Kind: "milestone", Verdict: "passed"}, {ID: "M1", Kind: "milestone", Verdict: "failed"}}}
	md := Render(mock, true, real, true)
	for _, want := range []string{
		"| criterion `network` | passed | not_measured (unsupported_by_target) | **no** | the target has no upstream |",
		"| milestone `M0` | passed | passed | yes |",
		"| milestone `M1` | failed | passed † (execd, sandbox) | **no** |",
		"**stand-in**", "`validation-422`", "no networkPolicy",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("ledger lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| milestone `M0` | passed | passed † ") {
		t.Errorf("M0 rests on no stand-in:\n%s", md)
	}
	// An absolute subject path is made relative to the repository.
	r := Run{Subject: "reference (/w/repo/fixtures/submissions/reference)"}
	r.RelativeTo("/w/repo")
	if r.Subject != "reference (fixtures/submissions/reference)" {
		t.Errorf("relative subject: %q", r.Subject)
	}
	r = Run{Subject: "x (/elsewhere/sub)"}
	r.RelativeTo("/w/repo")
	if r.Subject != "x (/elsewhere/sub)" {
		t.Errorf("a path outside the repository is kept: %q", r.Subject)
	}
	// Round trip through runs/*.json.
	if err := Save(dir, "docker", real); err != nil {
		t.Fatal(err)
	}
	got, ok, err := Load(dir, "docker")
	if err != nil || !ok || got.ServerVersion != "1.1.1" {
		t.Fatalf("load: %+v %v %v", got, ok, err)
	}
	if _, ok, err := Load(dir, "mock"); ok || err != nil {
		t.Fatalf("missing run: %v %v", ok, err)
	}
}
