// Package submission loads what is graded: a submission directory with a
// capstone.yaml manifest at its root, or a bare --subject command (a run-only
// submission). The manifest names the submission's entry points; the harness
// runs each with the directory as working directory.
//
//	name: alice-capstone            # optional display name (default: the directory name)
//	run: "python3 agent.py --csv {csv} --question {question} --out {out}"   # required
//	contract: "python3 contract.py --out {out}"   # optional: M0, writes {out}/contract.json
//	reap: "python3 reap.py"                       # optional: D5, removes residual sandboxes of $CAPSTONE_RUN_ID
//	test:                                         # optional: M4
//	  unit: "python3 -m pytest -q tests/unit --junitxml {out}/junit-unit.xml"
//	  integration: "python3 -m pytest -q tests/integration --junitxml {out}/junit-integration.xml"
//	readme: README.md                             # optional, default README.md
//	model: false                                  # optional: true = needs a model endpoint
//
// model: true gives every command (run, contract, reap, test.unit,
// test.integration) the harness's scripted model as OPENAI_BASE_URL and
// OPENAI_API_KEY; without it no command gets either.
package submission

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/regularfile"
)

// ManifestName is the file a submission directory must hold at its root.
const ManifestName = "capstone.yaml"

// MaxManifestBytes bounds the manifest (it is a handful of lines).
const MaxManifestBytes = 64 << 10

// Tests are the submission's M4 test commands.
type Tests struct {
	Unit        string `yaml:"unit"`
	Integration string `yaml:"integration"`
}

// Manifest is capstone.yaml.
type Manifest struct {
	Name     string `yaml:"name"`
	Run      string `yaml:"run"`
	Contract string `yaml:"contract"`
	Reap     string `yaml:"reap"`
	Test     Tests  `yaml:"test"`
	Readme   string `yaml:"readme"`
	Model    bool   `yaml:"model"`
}

// FieldError is one invalid manifest field.
type FieldError struct {
	Field   string // dotted path: "run", "test.unit"
	Line    int    // 0 when unknown (e.g. a missing field)
	Message string
}

// Error is one line, inert on a terminal (harness/inert): a field's name
// and its value are the submission's text.
func (e FieldError) Error() string {
	if e.Line > 0 {
		return inert.Line(fmt.Sprintf("%s (line %d): %s", e.Field, e.Line, e.Message))
	}
	return inert.Line(e.Field + ": " + e.Message)
}

// ManifestError lists every problem of one manifest.
type ManifestError struct {
	Path   string
	Fields []FieldError
}

// maxFieldErrors bounds the problems ManifestError prints (a manifest of a
// thousand unknown keys is one error, not a screenful).
const maxFieldErrors = 10

// Error is one line, inert on a terminal: at most maxFieldErrors problems,
// then how many more.
func (e *ManifestError) Error() string {
	var parts []string
	for i, f := range e.Fields {
		if i == maxFieldErrors {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Fields)-i))
			break
		}
		parts = append(parts, f.Error())
	}
	return inert.Line(e.Path) + ": " + strings.Join(parts, "; ")
}

// fieldName is how a key of the manifest is named in an error: as it is
// when it is a plain name, else quoted (harness/inert.Quote) and cut to 60
// characters. An unknown key is the submission's text: printed raw, one
// carried escape sequences and a forged "class summary" line to the
// grader's console.
func fieldName(key string) string {
	plain := key != "" && len(key) <= 60 && strings.IndexFunc(key, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.')
	}) < 0
	if plain {
		return key
	}
	return quoteCut(key)
}

// quoteCut is the submission's text quoted (harness/inert.Quote), cut to 60
// characters.
func quoteCut(s string) string {
	if r := []rune(s); len(r) > 60 {
		return inert.Quote(string(r[:60])) + "…"
	}
	return inert.Quote(s)
}

// fields are the manifest's known keys and their kinds.
var fields = map[string]string{
	"name": "string", "run": "string", "contract": "string", "reap": "string",
	"test": "mapping", "readme": "string", "model": "bool",
}

var testFields = map[string]bool{"unit": true, "integration": true}

// Parse validates and decodes a manifest. path names it in errors. Every
// field is checked and every problem reported, one per field.
func Parse(path string, b []byte) (*Manifest, error) {
	merr := &ManifestError{Path: path}
	add := func(field string, line int, format string, args ...any) {
		merr.Fields = append(merr.Fields, FieldError{Field: field, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	if len(b) > MaxManifestBytes {
		add("(file)", 0, "is %d bytes; a manifest is at most %d", len(b), MaxManifestBytes)
		return nil, merr
	}
	if bytes.IndexByte(b, 0) >= 0 {
		add("(file)", 0, "contains a NUL byte")
		return nil, merr
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		add("(file)", 0, "is not valid YAML: %v", err)
		return nil, merr
	}
	// A second document (after ---) would be silently ignored by a plain
	// decode: a manifest is one document.
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := extra.Line
		if err != nil {
			add("(file)", 0, "holds a second YAML document after ---, and it is not valid YAML: %v (a manifest is one document)", err)
		} else {
			add("(file)", line, "holds a second YAML document after --- (a manifest is one document)")
		}
		return nil, merr
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		add("run", 0, "is required (the manifest is empty)")
		return nil, merr
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		add("(file)", root.Line, "must be a mapping of fields (name, run, contract, reap, test, readme, model)")
		return nil, merr
	}
	m := &Manifest{}
	seen := map[string]bool{}
	invalid := map[string]bool{} // fields already reported
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		kind, known := fields[key]
		switch {
		case !known:
			add(fieldName(key), k.Line, "unknown field (known: name, run, contract, reap, test, readme, model)")
			continue
		case seen[key]:
			add(key, k.Line, "given twice")
			continue
		}
		seen[key] = true
		switch kind {
		case "string":
			s, ok := scalarString(v)
			if !ok {
				add(key, v.Line, "must be a string, got %s", describe(v))
				invalid[key] = true
				continue
			}
			setString(m, key, s)
		case "bool":
			var bv bool
			if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&bv) != nil {
				add(key, v.Line, "must be true or false, got %s", describe(v))
				continue
			}
			m.Model = bv
		case "mapping":
			if v.Kind != yaml.MappingNode {
				add(key, v.Line, "must be a mapping with unit and/or integration, got %s", describe(v))
				continue
			}
			tseen := map[string]bool{}
			for j := 0; j+1 < len(v.Content); j += 2 {
				tk, tv := v.Content[j], v.Content[j+1]
				f := "test." + tk.Value
				if !testFields[tk.Value] {
					add("test."+fieldName(tk.Value), tk.Line, "unknown field (known: test.unit, test.integration)")
					continue
				}
				if tseen[tk.Value] {
					add(f, tk.Line, "given twice")
					continue
				}
				tseen[tk.Value] = true
				seen[f] = true
				s, ok := scalarString(tv)
				if !ok {
					add(f, tv.Line, "must be a string, got %s", describe(tv))
					invalid[f] = true
					continue
				}
				if tk.Value == "unit" {
					m.Test.Unit = s
				} else {
					m.Test.Integration = s
				}
			}
		}
	}
	checkCommand := func(field, cmd string, required bool) {
		switch {
		case !seen[field] && required:
			add(field, 0, "is required (the command that runs the pipeline, e.g. \"python3 agent.py --csv {csv} --question {question} --out {out}\")")
		case seen[field] && !invalid[field] && strings.TrimSpace(cmd) == "":
			add(field, 0, "must not be empty (leave the field out if the submission has no such command)")
		}
	}
	checkCommand("run", m.Run, true)
	checkCommand("contract", m.Contract, false)
	checkCommand("reap", m.Reap, false)
	checkCommand("test.unit", m.Test.Unit, false)
	checkCommand("test.integration", m.Test.Integration, false)
	if seen["readme"] && !invalid["readme"] {
		r := m.Readme
		switch {
		case strings.TrimSpace(r) == "":
			add("readme", 0, "must name a file (default README.md)")
		case filepath.IsAbs(r) || strings.HasPrefix(filepath.Clean(r), ".."):
			add("readme", 0, "%s must be a path inside the submission directory", quoteCut(r))
		}
	}
	if seen["name"] && !invalid["name"] && strings.TrimSpace(m.Name) == "" {
		add("name", 0, "must not be empty (leave it out to use the directory name)")
	} else if strings.ContainsFunc(m.Name, inert.Dangerous) {
		// the name is printed on the console and in every report
		add("name", 0, "must not contain control characters (a newline, an escape sequence, a bidi override…)")
	}
	if len(merr.Fields) > 0 {
		return nil, merr
	}
	if m.Readme == "" {
		m.Readme = "README.md"
	}
	return m, nil
}

func scalarString(v *yaml.Node) (string, bool) {
	if v.Kind != yaml.ScalarNode || v.Tag != "!!str" {
		return "", false
	}
	return v.Value, true
}

func describe(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		switch v.Tag {
		case "!!null":
			return "nothing (null)"
		case "!!int", "!!float":
			return "the number " + v.Value
		case "!!bool":
			return v.Value
		}
		return quoteCut(v.Value)
	}
	return "an unsupported value"
}

func setString(m *Manifest, key, s string) {
	switch key {
	case "name":
		m.Name = s
	case "run":
		m.Run = s
	case "contract":
		m.Contract = s
	case "reap":
		m.Reap = s
	case "readme":
		m.Readme = s
	}
}

// ErrNoManifest is returned by Load for a directory without capstone.yaml.
var ErrNoManifest = errors.New("no " + ManifestName + " at the submission's root")

// readManifest reads dir/capstone.yaml, bounded. It opens without blocking
// (O_NONBLOCK) and checks the file before reading: a capstone.yaml that is a
// FIFO once hung the grade at the open, waiting for a writer.
func readManifest(dir string) ([]byte, error) {
	b, err := regularfile.Read(filepath.Join(dir, ManifestName), MaxManifestBytes)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", dir, ErrNoManifest)
	}
	return b, err
}
