package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"

	gherkin "github.com/cucumber/gherkin/go/v42"
	messages "github.com/cucumber/messages/go/v34"

	"github.com/osb-capstone/acceptance/features"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/steps"
)

// rubricMain prints the rubric index: for every entry its ID, kind, weight
// and statement, the scenarios tagged with it (feature:line) and, for each
// step of those scenarios, the Go function that implements it (file:line).
func rubricMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("rubric", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "text", "output format: text, md or json")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "acceptance rubric: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	write, ok := map[string]func(io.Writer, rubricIndex) error{"text": writeIndexText, "md": writeIndexMarkdown, "json": writeIndexJSON}[*format]
	if !ok {
		fmt.Fprintf(stderr, "acceptance rubric: --format %q: want text, md or json\n", *format)
		return 2
	}
	idx, err := buildRubricIndex(rubric.Course, features.FS)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance rubric: %v\n", err)
		return 2
	}
	if err := write(stdout, idx); err != nil {
		fmt.Fprintf(stderr, "acceptance rubric: %v\n", err)
		return 2
	}
	return 0
}

type rubricIndex struct {
	Entries []indexEntry `json:"entries"`
}

type indexEntry struct {
	ID       rubric.ID   `json:"id"`
	Kind     rubric.Kind `json:"kind"`
	Title    string      `json:"title"`
	Weight   float64     `json:"weight"` // a scoring item's weight, or a graded entry's share of the items it feeds
	Feeds    []rubric.ID `json:"feeds,omitempty"`
	Inputs   []rubric.ID `json:"inputs,omitempty"`
	Security bool        `json:"security,omitempty"`
	// FailOnlyOnViolation: a scenario fails it only on a violated property it measures.
	FailOnlyOnViolation bool `json:"fail_only_on_violation,omitempty"`
	// DependsOn: the components of a real target it rests on besides the control plane (graded entries).
	DependsOn []rubric.Component `json:"depends_on,omitempty"`
	Reviewer  bool               `json:"reviewer_judged,omitempty"`
	Statement string             `json:"statement"`
	// Central is what must have been exercised for the entry to pass (rubric.CentralProperty).
	Central string `json:"central_property"`
	// MeasurableOn lists the targets that can measure it; NotMeasurable says why the others cannot.
	MeasurableOn  []rubric.Target `json:"measurable_on"`
	NotMeasurable []string        `json:"not_measurable,omitempty"`
	Scenarios     []indexScenario `json:"scenarios"`
}

type indexScenario struct {
	Name    string      `json:"name"`
	Feature string      `json:"feature"`
	Line    int64       `json:"line"`
	Steps   []indexStep `json:"steps"`
}

type indexStep struct {
	Keyword string `json:"keyword"`
	Text    string `json:"text"`
	Line    int64  `json:"line"`
	Func    string `json:"func,omitempty"` // "" when no definition matches (undefined)
	File    string `json:"file,omitempty"`
	FLine   int    `json:"func_line,omitempty"`
}

// buildRubricIndex ties the registry, the feature files (with the Gherkin
// parser; tags inherited from the feature, rule and examples count) and the
// step definitions godog would use (the first that matches) together.
func buildRubricIndex(reg *rubric.Registry, fsys fs.FS) (rubricIndex, error) {
	defs, err := steps.Definitions()
	if err != nil {
		return rubricIndex{}, err
	}
	files, err := fs.Glob(fsys, "*.feature")
	if err != nil {
		return rubricIndex{}, err
	}
	sort.Strings(files)
	byID := map[rubric.ID][]indexScenario{}
	for _, name := range files {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return rubricIndex{}, err
		}
		ids := &messages.Incrementing{}
		doc, err := gherkin.ParseGherkinDocument(strings.NewReader(string(b)), ids.NewId)
		if err != nil {
			return rubricIndex{}, fmt.Errorf("parse %s: %w", name, err)
		}
		if doc.Feature == nil {
			continue
		}
		nodes := astNodes(doc)
		seen := map[string]bool{} // id + scenario node: an outline's rows are one scenario
		for _, p := range gherkin.Pickles(*doc, name, ids.NewId) {
			scen, ok := nodes.scenarios[p.AstNodeIds[0]]
			if !ok {
				continue
			}
			var sc *indexScenario
			for _, t := range p.Tags {
				id, ok, err := reg.ParseTag(t.Name)
				if !ok || err != nil || seen[string(id)+"\x00"+scen.Id] {
					continue
				}
				seen[string(id)+"\x00"+scen.Id] = true
				if sc == nil {
					sc = &indexScenario{Name: scen.Name, Feature: "features/" + name, Line: scen.Location.Line, Steps: []indexStep{}}
					for _, ps := range p.Steps {
						st := nodes.steps[ps.AstNodeIds[0]]
						is := indexStep{Text: ps.Text}
						if st != nil {
							is.Keyword, is.Line = strings.TrimSpace(st.Keyword), st.Location.Line
						}
						for _, d := range defs {
							if d.Match(ps.Text) {
								is.Func, is.File, is.FLine = d.Func, d.File, d.Line
								break
							}
						}
						sc.Steps = append(sc.Steps, is)
					}
				}
				byID[id] = append(byID[id], *sc)
			}
		}
	}
	weights := rubric.EntryWeights(reg.Items())
	var idx rubricIndex
	for _, e := range reg.All() {
		ie := indexEntry{ID: e.ID, Kind: e.Kind, Title: e.Title, Security: e.Security, Reviewer: e.ReviewGuide != "",
			FailOnlyOnViolation: e.FailOnlyOnViolation, DependsOn: e.DependsOn,
			Statement: e.Statement, Scenarios: byID[e.ID], MeasurableOn: []rubric.Target{}}
		if c, ok := rubric.CentralOf(e.ID); ok {
			ie.Central = c.Property
		}
		if e.Kind == rubric.KindScoring {
			ie.Weight, ie.Inputs = float64(e.Weight), e.Inputs
		} else {
			ie.Weight, ie.Feeds = rubric.Round2(weights[e.ID].Weight), weights[e.ID].Items
		}
		for _, t := range rubric.Targets {
			if s := e.Targets[t]; s.Measurable {
				ie.MeasurableOn = append(ie.MeasurableOn, t)
			} else if e.Kind != rubric.KindScoring {
				why := s.Reason
				if why == "" {
					why = "not measurable"
				}
				ie.NotMeasurable = append(ie.NotMeasurable, string(t)+": "+why)
			}
		}
		if ie.Scenarios == nil {
			ie.Scenarios = []indexScenario{}
		}
		idx.Entries = append(idx.Entries, ie)
	}
	return idx, nil
}

type gherkinNodes struct {
	scenarios map[string]*messages.Scenario
	steps     map[string]*messages.Step
}

func astNodes(doc *messages.GherkinDocument) gherkinNodes {
	n := gherkinNodes{scenarios: map[string]*messages.Scenario{}, steps: map[string]*messages.Step{}}
	addSteps := func(ss []*messages.Step) {
		for _, s := range ss {
			n.steps[s.Id] = s
		}
	}
	var children func([]*messages.FeatureChild)
	children = func(cs []*messages.FeatureChild) {
		for _, c := range cs {
			if c.Background != nil {
				addSteps(c.Background.Steps)
			}
			if c.Scenario != nil {
				n.scenarios[c.Scenario.Id] = c.Scenario
				addSteps(c.Scenario.Steps)
			}
			if c.Rule != nil {
				for _, rc := range c.Rule.Children {
					if rc.Background != nil {
						addSteps(rc.Background.Steps)
					}
					if rc.Scenario != nil {
						n.scenarios[rc.Scenario.Id] = rc.Scenario
						addSteps(rc.Scenario.Steps)
					}
				}
			}
		}
	}
	children(doc.Feature.Children)
	return n
}

func writeIndexJSON(w io.Writer, idx rubricIndex) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(idx)
}

func (e indexEntry) head() string {
	var parts []string
	parts = append(parts, string(e.Kind))
	if e.Security {
		parts = append(parts, "security")
	}
	if e.Reviewer {
		parts = append(parts, "reviewer-judged")
	}
	if e.FailOnlyOnViolation {
		parts = append(parts, "fails only on a violated property")
	}
	w := "weight " + rubric.Num(e.Weight)
	if len(e.Feeds) > 0 {
		w += " of " + joinIDs(e.Feeds)
	}
	if len(e.Inputs) > 0 {
		w += ", fed by " + joinIDs(e.Inputs)
	}
	return strings.Join(parts, ", ") + "; " + w
}

func joinIDs(ids []rubric.ID) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = string(id)
	}
	return strings.Join(s, ", ")
}

// restsOn says what a graded entry's verdict rests on on a real target
// ("" for a scoring item).
func (e indexEntry) restsOn() string {
	switch {
	case e.Kind == rubric.KindScoring:
		return ""
	case len(e.DependsOn) == 0:
		return "no sandbox component (measured through the lifecycle API, on the host or by a reviewer)"
	}
	s := make([]string, len(e.DependsOn))
	for i, c := range e.DependsOn {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

func targetList(ts []rubric.Target) string {
	if len(ts) == 0 {
		return "no target"
	}
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = string(t)
	}
	return strings.Join(s, ", ")
}

func (s indexStep) impl() string {
	if s.Func == "" {
		return "UNDEFINED (no step definition matches)"
	}
	return fmt.Sprintf("%s %s:%d", s.Func, s.File, s.FLine)
}

func writeIndexText(w io.Writer, idx rubricIndex) error {
	var b strings.Builder
	for i, e := range idx.Entries {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s  %s (%s)\n  %s\n  central property: %s\n  measurable on: %s\n", e.ID, e.Title, e.head(), e.Statement, e.Central, targetList(e.MeasurableOn))
		for _, n := range e.NotMeasurable {
			fmt.Fprintf(&b, "  not measurable on %s\n", n)
		}
		if r := e.restsOn(); r != "" {
			fmt.Fprintf(&b, "  rests on (real target): %s\n", r)
		}
		for _, sc := range e.Scenarios {
			fmt.Fprintf(&b, "  scenario %q %s:%d\n", sc.Name, sc.Feature, sc.Line)
			for _, st := range sc.Steps {
				fmt.Fprintf(&b, "    %s %s\n      → %s\n", st.Keyword, st.Text, st.impl())
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeIndexMarkdown(w io.Writer, idx rubricIndex) error {
	var b strings.Builder
	b.WriteString("# Rubric index\n\n")
	b.WriteString("Generated by `acceptance rubric --format md` (`make rubric`); do not edit by hand.\n")
	b.WriteString("For every rubric entry: its kind, weight and statement, the scenarios tagged with it, and for each step the Go function that implements it.\n")
	b.WriteString("A graded entry's weight is its share of the scoring items it feeds (item weight / number of inputs).\n")
	b.WriteString("\"Fails only on a violated property\": any other failure of the submission in its scenario leaves it not measured there. ")
	b.WriteString("\"Rests on\": the components of a real target's stack, besides its control plane, that its verdict depends on (a stand-in among them is marked at the verdict).\n\n")
	for _, kind := range []rubric.Kind{rubric.KindCriterion, rubric.KindMilestone, rubric.KindDrill, rubric.KindScoring} {
		fmt.Fprintf(&b, "- [%s](#%s)\n", kindTitle(kind), strings.ToLower(strings.ReplaceAll(kindTitle(kind), " ", "-")))
	}
	last := rubric.Kind("")
	for _, e := range idx.Entries {
		if e.Kind != last {
			fmt.Fprintf(&b, "\n## %s\n", kindTitle(e.Kind))
			last = e.Kind
		}
		fmt.Fprintf(&b, "\n### `%s` %s\n\n", e.ID, e.Title)
		fmt.Fprintf(&b, "- %s\n", e.head())
		fmt.Fprintf(&b, "- Statement: %s\n", e.Statement)
		fmt.Fprintf(&b, "- Central property (passes only when exercised): %s\n", e.Central)
		fmt.Fprintf(&b, "- Measurable on: %s\n", targetList(e.MeasurableOn))
		for _, n := range e.NotMeasurable {
			fmt.Fprintf(&b, "- Not measurable on %s\n", n)
		}
		if r := e.restsOn(); r != "" {
			fmt.Fprintf(&b, "- Rests on (real target): %s\n", r)
		}
		if e.Kind != rubric.KindScoring && len(e.Scenarios) == 0 {
			b.WriteString("- No scenario is tagged with it.\n")
		}
		for _, sc := range e.Scenarios {
			fmt.Fprintf(&b, "\n**Scenario:** %s (`%s:%d`)\n\n", sc.Name, sc.Feature, sc.Line)
			for _, st := range sc.Steps {
				impl := "**undefined**"
				if st.Func != "" {
					impl = fmt.Sprintf("`%s` (`%s:%d`)", st.Func, st.File, st.FLine)
				}
				fmt.Fprintf(&b, "1. %s %s → %s\n", st.Keyword, indexMDEscape(st.Text), impl)
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func kindTitle(k rubric.Kind) string {
	return map[rubric.Kind]string{rubric.KindCriterion: "Criteria", rubric.KindMilestone: "Milestones",
		rubric.KindDrill: "Drills", rubric.KindScoring: "Scoring items"}[k]
}

func indexMDEscape(s string) string {
	return strings.NewReplacer("*", `\*`, "_", `\_`, "<", `\<`, "|", `\|`).Replace(s)
}
