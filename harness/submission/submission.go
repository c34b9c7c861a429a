package submission

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/osb-capstone/acceptance/harness/subject"
)

// Source says where a submission came from.
const (
	SourceManifest = "manifest" // a directory with capstone.yaml
	SourceCommand  = "command"  // --subject 'CMD': run only
	SourceBuiltin  = "builtin"  // --subject reference: the bundled reference, complete
)

// Submission is what one grading run grades.
type Submission struct {
	// Dir is the submission directory (absolute), the working directory of
	// every command. Empty for a bare --subject command: the harness then
	// picks the working directory.
	Dir      string
	Source   string
	Manifest Manifest
}

// Name is the display name: the manifest's, else the directory's, else the command.
func (s *Submission) Name() string {
	switch {
	case s.Manifest.Name != "":
		return s.Manifest.Name
	case s.Dir != "":
		return filepath.Base(s.Dir)
	}
	return s.Manifest.Run
}

// Load reads and validates dir/capstone.yaml.
func Load(dir string) (*Submission, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("submission %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("submission %s is not a directory", dir)
	}
	b, err := readManifest(abs)
	if err != nil {
		return nil, err
	}
	m, err := Parse(filepath.Join(dir, ManifestName), b)
	if err != nil {
		return nil, err
	}
	for _, c := range m.Commands() {
		if _, err := subject.Parse(c.Command); err != nil {
			return nil, fmt.Errorf("%s: %s: %v", filepath.Join(dir, ManifestName), c.Field, err)
		}
	}
	return &Submission{Dir: abs, Source: SourceManifest, Manifest: *m}, nil
}

// FromCommand is a run-only submission: --subject 'CMD'. The bundled
// reference ("reference") is a complete submission: see Reference.
func FromCommand(cmd string) (*Submission, error) {
	if strings.TrimSpace(cmd) == subject.ReferenceName {
		return Reference(), nil
	}
	if _, err := subject.Parse(cmd); err != nil {
		return nil, err
	}
	return &Submission{Source: SourceCommand, Manifest: Manifest{Run: cmd, Readme: "README.md"}}, nil
}

// ReferenceDir is where the repository keeps the reference as a submission
// directory (with its README); `--subject reference` grades it when it is
// there (relative to the working directory).
const ReferenceDir = "fixtures/submissions/reference"

// Reference is the bundled reference pipeline as a complete submission: the
// repository's fixtures/submissions/reference when the working directory has
// it, else the same entry points built in (every one a mode of the acceptance
// binary; no README, so its README check cannot pass).
func Reference() *Submission {
	if s, err := Load(ReferenceDir); err == nil {
		s.Source = SourceBuiltin
		return s
	}
	return &Submission{Source: SourceBuiltin, Manifest: Manifest{
		Name:     "reference",
		Run:      "{acceptance} reference --csv {csv} --question {question} --out {out}",
		Contract: "{acceptance} reference contract --out {out}",
		Reap:     "{acceptance} reference reap",
		Test: Tests{
			Unit:        "{acceptance} reference selftest unit --junit {out}/junit-unit.xml",
			Integration: "{acceptance} reference selftest integration --junit {out}/junit-integration.xml",
		},
		Readme: "README.md",
	}}
}

// Command is one entry point of a manifest.
type Command struct {
	Field   string // "run", "contract", "reap", "test.unit", "test.integration"
	Command string
}

// Commands lists the declared entry points.
func (m Manifest) Commands() []Command {
	var out []Command
	for _, c := range []Command{{"run", m.Run}, {"contract", m.Contract}, {"reap", m.Reap},
		{"test.unit", m.Test.Unit}, {"test.integration", m.Test.Integration}} {
		if c.Command != "" {
			out = append(out, c)
		}
	}
	return out
}

// Template parses one of the submission's commands.
func (s *Submission) Template(cmd string) (subject.Template, error) {
	return subject.Parse(cmd)
}

// Missing explains, in the words of a reason, that the submission does not
// declare an entry point ("the submission declares no contract check").
func (s *Submission) Missing(field string) string {
	what := map[string]string{
		"contract":         "no contract check (capstone.yaml: contract)",
		"reap":             "no inspection (reap) command (capstone.yaml: reap)",
		"test.unit":        "no unit test command (capstone.yaml: test.unit)",
		"test.integration": "no integration test command (capstone.yaml: test.integration)",
	}[field]
	if what == "" {
		what = "no " + field + " command"
	}
	if s.Source == SourceCommand {
		return "the submission declares " + what + ": it was given as a bare --subject command, which is run-only"
	}
	return "the submission declares " + what
}

// ErrRunOnly marks a run-only submission's missing entry point.
var ErrRunOnly = errors.New("run-only submission")
