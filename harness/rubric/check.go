package rubric

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"
)

// FeatureIndex is what the feature files say about the rubric.
type FeatureIndex struct {
	Files []string
	// Covered maps each rubric ID to the "file: scenario" names of the
	// runnable scenarios (pickles) that carry its tag, directly or inherited
	// from their Feature, Rule or Examples.
	Covered map[ID][]string
	// Problems are tag errors: unknown IDs, wrong kinds, tagged scoring items.
	Problems []string
}

// ScanFeatures parses every *.feature file in dir with the Gherkin parser.
// A parse error is returned as an error (the features are broken).
func ScanFeatures(reg *Registry, dir string) (*FeatureIndex, error) {
	return ScanFeaturesFS(reg, os.DirFS(dir))
}

// ScanFeaturesFS is ScanFeatures over a file system, e.g. the embedded
// features.FS, so `acceptance run` can check the rubric before running.
func ScanFeaturesFS(reg *Registry, fsys fs.FS) (*FeatureIndex, error) {
	files, err := fs.Glob(fsys, "*.feature")
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	idx := &FeatureIndex{Files: files, Covered: map[ID][]string{}}
	for _, f := range files {
		if err := idx.scanFile(reg, fsys, f); err != nil {
			return nil, err
		}
	}
	return idx, nil
}

func (idx *FeatureIndex) scanFile(reg *Registry, fsys fs.FS, name string) error {
	fh, err := fsys.Open(name)
	if err != nil {
		return err
	}
	defer fh.Close()
	ids := &messages.Incrementing{}
	doc, err := gherkin.ParseGherkinDocument(fh, ids.NewId)
	if err != nil {
		return fmt.Errorf("rubric: parse %s: %w", name, err)
	}
	base := path.Base(name)
	for _, t := range docTags(doc) {
		if _, _, err := reg.ParseTag(t.Name); err != nil {
			line := int64(0)
			if t.Location != nil {
				line = t.Location.Line
			}
			idx.Problems = append(idx.Problems, fmt.Sprintf("%s:%d: %v", base, line, err))
		}
	}
	if doc.Feature == nil {
		return nil
	}
	for _, p := range gherkin.Pickles(*doc, name, ids.NewId) {
		for _, t := range p.Tags {
			if id, ok, err := reg.ParseTag(t.Name); ok && err == nil {
				idx.Covered[id] = append(idx.Covered[id], base+": "+p.Name)
			}
		}
	}
	return nil
}

func docTags(doc *messages.GherkinDocument) []*messages.Tag {
	if doc == nil || doc.Feature == nil {
		return nil
	}
	var out []*messages.Tag
	scen := func(s *messages.Scenario) {
		if s == nil {
			return
		}
		out = append(out, s.Tags...)
		for _, ex := range s.Examples {
			out = append(out, ex.Tags...)
		}
	}
	out = append(out, doc.Feature.Tags...)
	for _, c := range doc.Feature.Children {
		scen(c.Scenario)
		if c.Rule != nil {
			out = append(out, c.Rule.Tags...)
			for _, rc := range c.Rule.Children {
				scen(rc.Scenario)
			}
		}
	}
	return out
}

// CheckRegistry validates the registry on its own: unique IDs (by
// construction), scoring weights summing to 100, scoring inputs that exist and
// are not scoring items, every graded entry feeding at least one scoring item,
// statements and target support present.
func CheckRegistry(reg *Registry) []string {
	var probs []string
	if w := reg.TotalWeight(); w != 100 {
		probs = append(probs, fmt.Sprintf("scoring weights sum to %d, not 100", w))
	}
	for _, e := range reg.All() {
		if strings.TrimSpace(e.Statement) == "" {
			probs = append(probs, fmt.Sprintf("%s: no statement", e.ID))
		}
		if e.Kind == KindScoring {
			if e.Weight <= 0 {
				probs = append(probs, fmt.Sprintf("%s: weight %d", e.ID, e.Weight))
			}
			if len(e.Inputs) == 0 {
				probs = append(probs, fmt.Sprintf("%s: no inputs", e.ID))
			}
			for _, in := range e.Inputs {
				ie, ok := reg.Get(in)
				if !ok {
					probs = append(probs, fmt.Sprintf("%s: unknown input %q", e.ID, in))
				} else if ie.Kind == KindScoring {
					probs = append(probs, fmt.Sprintf("%s: input %q is a scoring item", e.ID, in))
				}
			}
			continue
		}
		if len(e.Evidence) == 0 {
			probs = append(probs, fmt.Sprintf("%s: no evidence listed", e.ID))
		}
		for _, t := range Targets {
			s, ok := e.Targets[t]
			if !ok {
				probs = append(probs, fmt.Sprintf("%s: target %s not described", e.ID, t))
			} else if !s.Measurable && s.Reason == "" {
				probs = append(probs, fmt.Sprintf("%s: not measurable on %s without a reason", e.ID, t))
			}
		}
		if len(reg.FeedsScoring(e.ID)) == 0 {
			probs = append(probs, fmt.Sprintf("%s: feeds no scoring item", e.ID))
		}
	}
	return probs
}

// Check ties the registry to the feature files in dir: it returns every
// problem of CheckRegistry, every feature tag naming an unknown ID (or the
// wrong kind), and every entry that needs a feature (Entry.NeedsFeature) but
// no runnable scenario carries its tag. Entries that are reviewer judgment
// only (measurable on no target) need no feature.
func Check(reg *Registry, dir string) ([]string, *FeatureIndex, error) {
	return CheckFS(reg, os.DirFS(dir))
}

// CheckFS is Check over a file system (e.g. the embedded features.FS).
func CheckFS(reg *Registry, fsys fs.FS) ([]string, *FeatureIndex, error) {
	probs := CheckRegistry(reg)
	idx, err := ScanFeaturesFS(reg, fsys)
	if err != nil {
		return probs, nil, err
	}
	probs = append(probs, idx.Problems...)
	for _, e := range reg.Graded() {
		if e.NeedsFeature() && len(idx.Covered[e.ID]) == 0 {
			probs = append(probs, fmt.Sprintf("%s: no scenario is tagged %s", e.ID, e.Tag()))
		}
	}
	return probs, idx, nil
}
