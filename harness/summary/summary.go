// Package summary defines summary.json, the run summary every subject writes
// (design.md "Submission contract"): its JSON Schema (draft 2020-12, embedded),
// the Go type, and validation with santhosh-tekuri/jsonschema.
package summary

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/osb-capstone/acceptance/harness/regularfile"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// SchemaJSON is the JSON Schema for summary.json.
//
//go:embed summary.schema.json
var SchemaJSON []byte

// SchemaFile is the schema's path relative to the repository root (for the README).
const SchemaFile = "harness/summary/summary.schema.json"

// SchemaID is the schema's $id.
const SchemaID = "https://osb-capstone.local/schemas/summary.schema.json"

// Error classes allowed in summary.json's error.class.
const (
	ClassNetworkPolicy = "network_policy"
	ClassScriptError   = "script_error"
	ClassCapacity      = "capacity"
	ClassSandboxGone   = "sandbox_gone"
	ClassTimeout       = "timeout"
	ClassBudget        = "budget"
	ClassInputError    = "input_error"
	ClassPlatformError = "platform_error"
)

// ErrorClasses lists every allowed class.
var ErrorClasses = []string{ClassNetworkPolicy, ClassScriptError, ClassCapacity, ClassSandboxGone,
	ClassTimeout, ClassBudget, ClassInputError, ClassPlatformError}

// Summary is summary.json.
type Summary struct {
	SandboxID  string             `json:"sandbox_id"`
	ExitCode   int                `json:"exit_code"`
	DurationMs int64              `json:"duration_ms"`
	StopReason string             `json:"stop_reason"`
	Error      *Error             `json:"error"`
	Metrics    map[string]float64 `json:"metrics"`
	Steps      []Step             `json:"steps"`
	// Budget is optional: what the run declared (agents: max_model_turns).
	Budget *Budget `json:"budget,omitempty"`
	// Degraded is optional: what the run went on without, and why (e.g. an
	// install skipped because the package index was unreachable).
	Degraded []Degradation `json:"degraded,omitempty"`
}

// Degradation is a step the run did without, non-fatally.
type Degradation struct {
	Step   string `json:"step"`
	Reason string `json:"reason"`
}

// Budget is the budgets a run declares about itself.
type Budget struct {
	MaxModelTurns int `json:"max_model_turns,omitempty"`
}

// Error is the classified cause of a failed run.
type Error struct {
	Class   string `json:"class"`
	Message string `json:"message"`
}

// Step is one command run in the sandbox. ExitCode nil = never finished.
type Step struct {
	Name       string `json:"name"`
	Command    string `json:"command"`
	ExitCode   *int   `json:"exit_code"`
	DurationMs int64  `json:"duration_ms"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated"`
}

// ValidationError is one way a document fails the schema.
type ValidationError struct {
	// Path is the JSON pointer of the offending value ("" = the document).
	Path string
	// Keyword is the schema keyword that failed (e.g. "required", "type", "enum").
	Keyword string
	Message string
}

func (v ValidationError) String() string {
	p := v.Path
	if p == "" {
		p = "(document)"
	}
	return fmt.Sprintf("summary.json %s: %s", p, v.Message)
}

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

// Schema returns the compiled schema.
func Schema() (*jsonschema.Schema, error) {
	schemaOnce.Do(func() {
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON))
		if err != nil {
			schemaErr = fmt.Errorf("summary: schema is not JSON: %w", err)
			return
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource(SchemaID, doc); err != nil {
			schemaErr = fmt.Errorf("summary: add schema: %w", err)
			return
		}
		schema, schemaErr = c.Compile(SchemaID)
	})
	return schema, schemaErr
}

// Validate checks a summary.json document. It returns the problems found
// (none = valid); the error is only for a schema that does not compile.
func Validate(data []byte) ([]ValidationError, error) {
	sch, err := Schema()
	if err != nil {
		return nil, err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return []ValidationError{{Keyword: "json", Message: "not valid JSON: " + err.Error()}}, nil
	}
	err = sch.Validate(inst)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, fmt.Errorf("summary: validate: %w", err)
	}
	var out []ValidationError
	collect(ve, &out)
	if len(out) == 0 { // never report "invalid" without a reason
		out = append(out, ValidationError{Message: ve.Error()})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

var printer = message.NewPrinter(language.English)

// collect flattens the error tree into its leaves (the actual failures).
func collect(e *jsonschema.ValidationError, out *[]ValidationError) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collect(c, out)
		}
		return
	}
	kw := ""
	if p := e.ErrorKind.KeywordPath(); len(p) > 0 {
		kw = p[len(p)-1]
	}
	path := ""
	for _, t := range e.InstanceLocation {
		path += "/" + strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1")
	}
	*out = append(*out, ValidationError{Path: path, Keyword: kw, Message: e.ErrorKind.LocalizedString(printer)})
}

// MaxBytes is the largest summary.json Load reads: steps are clipped to 8 KiB
// of output each, so a real one is far smaller.
const MaxBytes = 16 << 20

// readBounded reads a regular file of at most max bytes (see regularfile.Read:
// a FIFO summary.json would otherwise wait for a writer forever, and a huge
// one would fill the harness's memory).
func readBounded(path string, max int64) ([]byte, error) {
	data, err := regularfile.Read(path, max)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, max)
	}
	return data, nil
}

// Load reads and validates path. The Summary is returned whenever the file is
// JSON (best effort for invalid documents: fields of the wrong type stay zero);
// the error is only for an unreadable file or a broken schema.
func Load(path string) (*Summary, []ValidationError, error) {
	data, err := readBounded(path, MaxBytes)
	if err != nil {
		return nil, nil, fmt.Errorf("summary: %w", err)
	}
	verrs, err := Validate(data)
	if err != nil {
		return nil, nil, err
	}
	var s Summary
	if jerr := json.Unmarshal(data, &s); jerr != nil {
		var syn *json.SyntaxError
		if errors.As(jerr, &syn) || !json.Valid(data) {
			return nil, verrs, nil
		}
	}
	return &s, verrs, nil
}

// Marshal renders s as indented JSON (nil maps/slices become {} and []).
func (s *Summary) Marshal() ([]byte, error) {
	cp := *s
	if cp.Metrics == nil {
		cp.Metrics = map[string]float64{}
	}
	if cp.Steps == nil {
		cp.Steps = []Step{}
	}
	return json.MarshalIndent(&cp, "", "  ")
}

// Write validates s and writes it to path (via a temp file and rename). An
// invalid summary is still written, and the problems are returned as an error,
// so a failing run never loses its summary.
func Write(path string, s *Summary) error {
	b, err := s.Marshal()
	if err != nil {
		return fmt.Errorf("summary: encode: %w", err)
	}
	b = append(b, '\n')
	tmp, err := os.CreateTemp(filepath.Dir(path), ".summary-*.json")
	if err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("summary: %w", err)
	}
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp makes 0600; graders may run as another user
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("summary: %w", err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("summary: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("summary: %w", err)
	}
	verrs, err := Validate(b)
	if err != nil {
		return err
	}
	if len(verrs) > 0 {
		msgs := make([]string, len(verrs))
		for i, v := range verrs {
			msgs[i] = v.String()
		}
		return fmt.Errorf("summary: written but invalid: %s", strings.Join(msgs, "; "))
	}
	return nil
}
