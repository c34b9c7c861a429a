package fidelity

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Run is one graded run, distilled from its report.json.
type Run struct {
	Target        string            `json:"target"`      // mock | docker | URL
	TargetKind    string            `json:"target_kind"` // mock | real
	Date          time.Time         `json:"date"`
	Subject       string            `json:"subject"`
	Tags          string            `json:"tags,omitempty"`
	ServerVersion string            `json:"server_version,omitempty"`
	Components    map[string]string `json:"components,omitempty"` // name → "version (official|stand-in)"
	Entries       []Entry           `json:"entries"`
}

// Entry is one rubric entry's verdict in a run.
type Entry struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"` // criterion | milestone | drill
	Verdict  string `json:"verdict"`
	Category string `json:"category,omitempty"`
	Reason   string `json:"reason,omitempty"`
	// StandIns are the stand-in components the verdict rests on (report.json's
	// per-entry stand_ins; rubric.DependsOn).
	StandIns []string `json:"stand_ins,omitempty"`
}

type reportDoc struct {
	Target     string            `json:"target"`
	TargetKind string            `json:"target_kind"`
	Subject    string            `json:"subject"`
	Tags       string            `json:"tags"`
	Versions   map[string]string `json:"versions"`
	StartedAt  time.Time         `json:"started_at"`
	Criteria   []reportEntry     `json:"criteria"`
	Milestones []reportEntry     `json:"milestones"`
	Drills     []reportEntry     `json:"drills"`
}

type reportEntry struct {
	ID       string   `json:"id"`
	Verdict  string   `json:"verdict"`
	Category string   `json:"category"`
	Reason   string   `json:"reason"`
	StandIns []string `json:"stand_ins"`
}

// FromReport distils a report bundle's report.json.
func FromReport(bundleDir string) (Run, error) {
	b, err := os.ReadFile(filepath.Join(bundleDir, "report.json"))
	if err != nil {
		return Run{}, err
	}
	var d reportDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return Run{}, fmt.Errorf("%s/report.json: %w", bundleDir, err)
	}
	r := Run{Target: d.Target, TargetKind: d.TargetKind, Date: d.StartedAt.UTC(), Subject: d.Subject, Tags: d.Tags}
	for k, v := range d.Versions {
		if name, ok := strings.CutPrefix(k, "component: "); ok {
			if r.Components == nil {
				r.Components = map[string]string{}
			}
			r.Components[name] = v
			if name == "control plane" {
				r.ServerVersion = strings.TrimPrefix(strings.Fields(v)[0], "opensandbox-server==")
			}
		}
	}
	if r.ServerVersion == "" && d.TargetKind == "mock" {
		r.ServerVersion = "bundled " + d.Versions["acceptance"]
	}
	add := func(kind string, es []reportEntry) {
		for _, e := range es {
			r.Entries = append(r.Entries, Entry{ID: e.ID, Kind: kind, Verdict: e.Verdict, Category: e.Category, Reason: e.Reason, StandIns: e.StandIns})
		}
	}
	add("criterion", d.Criteria)
	add("milestone", d.Milestones)
	add("drill", d.Drills)
	sort.SliceStable(r.Entries, func(i, j int) bool { return kindOrder(r.Entries[i].Kind) < kindOrder(r.Entries[j].Kind) })
	return r, nil
}

// RelativeTo rewrites an absolute path in the subject's name ("reference
// (/abs/repo/fixtures/…)") relative to dir when it lies under it, so the
// committed ledger names no machine's checkout.
func (r *Run) RelativeTo(dir string) {
	open := strings.LastIndex(r.Subject, " (/")
	if open < 0 || !strings.HasSuffix(r.Subject, ")") {
		return
	}
	p := r.Subject[open+2 : len(r.Subject)-1]
	if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") {
		r.Subject = r.Subject[:open] + " (" + filepath.ToSlash(rel) + ")"
	}
}

func kindOrder(k string) int {
	switch k {
	case "criterion":
		return 0
	case "milestone":
		return 1
	}
	return 2
}

// Load reads runs/<name>.json under dir; a missing file is (zero, false).
func Load(dir, name string) (Run, bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, "runs", name+".json"))
	if os.IsNotExist(err) {
		return Run{}, false, nil
	}
	if err != nil {
		return Run{}, false, err
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return Run{}, false, fmt.Errorf("runs/%s.json: %w", name, err)
	}
	return r, true, nil
}

// Save writes runs/<name>.json under dir.
func Save(dir, name string, r Run) error {
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "runs", name+".json"), append(b, '\n'), 0o644)
}
