package report

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// MetaFile is the run metadata's name inside the bundle.
const MetaFile = "run.json"

// Meta describes the run. Secrets never go here (the API key is not a field).
type Meta struct {
	RunID string `json:"run_id"`
	// Target is what the run graded against: "mock" or the server URL.
	Target     string        `json:"target"`
	TargetKind rubric.Target `json:"target_kind"`
	Subject    string        `json:"subject"`
	// SubmissionDir is the graded submission's directory (a capstone.yaml
	// at its root), when it was graded from one: reproduce lines grade it.
	SubmissionDir string `json:"submission_dir,omitempty"`
	// Builtin: the subject is the bundled reference (`--subject reference`).
	Builtin bool   `json:"builtin,omitempty"`
	Seed    int64  `json:"seed"`
	Tags    string `json:"tags,omitempty"`
	// Submission is the graded submission's identity, its directory's name
	// (submission.Identity): what `grade --shard` hashes and `acceptance
	// class` matches bundles of the same submission by. Empty for --subject.
	Submission string `json:"submission,omitempty"`
	// Versions names what ran (harness, server, go, python …).
	Versions  map[string]string `json:"versions,omitempty"`
	StartedAt time.Time         `json:"started_at"`
	EndedAt   time.Time         `json:"ended_at,omitzero"`
	// Command is the harness executable used in reproduce commands; "acceptance" if empty.
	Command string `json:"command,omitempty"`
	// Aborted says why the run ended early (a panic, a signal), if it did.
	Aborted string `json:"aborted,omitempty"`
	// Preflight is the target preflight's result (nil: none ran).
	Preflight *Preflight `json:"preflight,omitempty"`
}

func writeMeta(dir string, m Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(filepath.Join(dir, MetaFile), append(b, '\n'))
}

func readMeta(dir string) (Meta, error) {
	var m Meta
	b, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if err != nil {
		return m, fmt.Errorf("report: read run metadata: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("report: parse run metadata: %w", err)
	}
	return m, nil
}

// writeFileAtomic writes to a temp file in the same dir, syncs, renames.
func WriteFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Preflight is the target preflight: the harness's own contract check of
// the server, run before anything is graded, never scored. A failed preflight
// makes the run incomplete (exit 3).
type Preflight struct {
	Passed bool             `json:"passed"`
	Reason string           `json:"reason,omitempty"`
	Checks []PreflightCheck `json:"checks"`
}

// PreflightCheck is one exchange of the preflight.
type PreflightCheck struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail"`
}
