package dockertarget

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDockerSliceGate runs the docker slice's gate (.ci/docker-slice-gate.py)
// on report.json documents: M0, M1 and M2 must be passed; a not-measured
// outcome passes the gate only as a documented real-target limit.
func TestDockerSliceGate(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("not measured: %s is missing (the gate runs with it in CI)", py)
	}
	wd, _ := os.Getwd()
	gate := filepath.Join(findRepo(wd), ".ci", "docker-slice-gate.py")
	type outcome struct {
		Scenario string `json:"scenario"`
		Verdict  string `json:"verdict"`
		Category string `json:"category,omitempty"`
		Reason   string `json:"reason,omitempty"`
	}
	type entry struct {
		ID       string    `json:"id"`
		Verdict  string    `json:"verdict"`
		Category string    `json:"category,omitempty"`
		Reason   string    `json:"reason"`
		Outcomes []outcome `json:"outcomes"`
	}
	pass := func(id string, extra ...outcome) entry {
		return entry{ID: id, Verdict: "passed", Reason: "ok", Outcomes: append([]outcome{{Scenario: id + " s", Verdict: "passed"}}, extra...)}
	}
	noAudit := outcome{Scenario: "three runs", Verdict: "not_measured", Category: "unsupported_by_target",
		Reason: "target real has no audit trail of commands and files inside a sandbox"}
	noUpstream := outcome{Scenario: "probe", Verdict: "not_measured", Category: "unsupported_by_target",
		Reason: "the target has no upstream: the lookup of pypi.org failed temporarily (SERVFAIL/EAI_AGAIN)"}
	// steps/drill.go's wording of the fault-injection limit (M1's platform fault).
	noInjection := outcome{Scenario: "platform fault", Verdict: "not_measured", Category: "unsupported_by_target",
		Reason: "the suite injects this fault through the bundled server's admin API only; it does not inject it on target real"}
	cases := []struct {
		name string
		ms   []entry
		ok   bool
		say  string
	}{
		{"all passed", []entry{pass("M0"), pass("M1"), pass("M2")}, true, ""},
		{"passed with documented limits", []entry{pass("M0"), pass("M1", noAudit), pass("M2", noUpstream)}, true, ""},
		{"passed with the fault-injection limit", []entry{pass("M0"), pass("M1", noInjection), pass("M2")}, true, ""},
		{"not measured, documented limit only", []entry{pass("M0"), pass("M1"),
			{ID: "M2", Verdict: "not_measured", Category: "unsupported_by_target", Reason: "x", Outcomes: []outcome{noUpstream}}}, true, "documented real-target limit"},
		{"M2 failed", []entry{pass("M0"), pass("M1"), {ID: "M2", Verdict: "failed", Reason: "numbers differ",
			Outcomes: []outcome{{Verdict: "failed", Reason: "numbers differ"}}}}, false, "GATE: M2 failed: numbers differ"},
		{"M1 harness error", []entry{pass("M0"), {ID: "M1", Verdict: "harness_error", Reason: "boom",
			Outcomes: []outcome{{Verdict: "harness_error", Reason: "boom"}}}, pass("M2")}, false, "GATE: M1 harness_error"},
		{"timeout is not a limit", []entry{pass("M0"), pass("M1"), {ID: "M2", Verdict: "not_measured", Category: "timeout", Reason: "t",
			Outcomes: []outcome{{Scenario: "large", Verdict: "not_measured", Category: "timeout", Reason: "subject timed out"}}}}, false, "without a documented real-target limit"},
		{"passed but an undocumented outcome", []entry{pass("M0"), pass("M1", outcome{Scenario: "s2", Verdict: "not_measured",
			Category: "precondition_unmet", Reason: "no report.md"}), pass("M2")}, false, "GATE: M1 passed (not measured without"},
		{"unsupported but undocumented reason", []entry{pass("M0"), pass("M1"), {ID: "M2", Verdict: "not_measured", Category: "unsupported_by_target",
			Outcomes: []outcome{{Verdict: "not_measured", Category: "unsupported_by_target", Reason: "something else"}}}}, false, "GATE: M2 not_measured"},
		{"not measured, no scenario", []entry{pass("M0"), pass("M1"), {ID: "M2", Verdict: "not_measured", Reason: "no scenario measured this", Outcomes: []outcome{}}}, false, "GATE: M2 not_measured"},
		{"M2 missing", []entry{pass("M0"), pass("M1")}, false, "GATE: M2: no verdict"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(map[string]any{"milestones": tc.ms})
			p := filepath.Join(t.TempDir(), "report.json")
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(py, gate, p).CombinedOutput()
			if ok := err == nil; ok != tc.ok {
				t.Fatalf("gate ok=%v, want %v (%v):\n%s", ok, tc.ok, err, out)
			}
			if ee, isExit := err.(*exec.ExitError); err != nil && (!isExit || ee.ExitCode() != 1) {
				t.Fatalf("gate exit: %v\n%s", err, out)
			}
			if tc.say != "" && !strings.Contains(string(out), tc.say) {
				t.Errorf("gate output lacks %q:\n%s", tc.say, out)
			}
		})
	}
}
