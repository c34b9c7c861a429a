package report

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// SchemaVersion is report.json's schema version.
const SchemaVersion = "1"

// Document is report.json's shape, and what every writer renders.
type Document struct {
	SchemaVersion string         `json:"schema_version"`
	RunID         string         `json:"run_id"`
	Verdict       rubric.Overall `json:"verdict"`
	VerdictReason string         `json:"verdict_reason"`
	ExitCode      int            `json:"exit_code"`
	Aborted       string         `json:"aborted,omitempty"`
	// Preflight is the target preflight (its own section; never scored).
	Preflight  *Preflight    `json:"preflight,omitempty"`
	Score      rubric.Score  `json:"score"`
	Scoring    []ScoringRow  `json:"scoring"`
	Criteria   []EntryRow    `json:"criteria"`
	Milestones []EntryRow    `json:"milestones"`
	Drills     []EntryRow    `json:"drills"`
	Drift      []DriftResult `json:"drift"`
	// JournalSkipped counts torn journal lines (a crash mid-write).
	JournalSkipped int `json:"journal_skipped,omitempty"`
	// JournalRefused says the journal on disk was altered during the run
	// (lines of another run, edited or removed lines) and what was done.
	JournalRefused string `json:"journal_refused,omitempty"`

	Target     string        `json:"target"`
	TargetKind rubric.Target `json:"target_kind"`
	Subject    string        `json:"subject"`
	// Submission is the submission's identity (Meta.Submission).
	Submission string            `json:"submission,omitempty"`
	Seed       int64             `json:"seed"`
	Tags       string            `json:"tags,omitempty"`
	Versions   map[string]string `json:"versions"`
	// StandIns are the target's components that are stand-ins, not
	// OpenSandbox's own (from the "component: …" versions; none on the
	// bundled server). Each entry row names those its verdict rests on.
	StandIns []rubric.Component `json:"stand_ins,omitempty"`
	// Provenance is each real-target component's provenance label (official,
	// from the engine, declares upstream commit X (not verified), stand-in), from the
	// "component: …" versions; each entry row carries those its verdict rests on.
	Provenance map[rubric.Component]string `json:"provenance,omitempty"`
	StartedAt  time.Time                   `json:"started_at"`
	EndedAt    time.Time                   `json:"ended_at"`
	// Confinement is how the submission's commands were confined (from
	// their records; nil when none ran).
	Confinement *Confinement `json:"confinement,omitempty"`

	// Final is the score after a reviewer's judgement (review.json), merged
	// at render time; never part of report.json, whose measured content a
	// review leaves byte-identical.
	Final *Final `json:"-"`
	// Points is the final score the renderers print: Final when reviewed,
	// else the measured points alone. Set by Scored before any renderer
	// runs (renderers compute no score); never part of report.json.
	Points *Final `json:"-"`
	// Runs are the subject runs' timelines (from evidence/subject-*/), read
	// at render time for report.html.
	Runs []SubjectRun `json:"-"`
	// Invocations are the timelines of the submission's contract, reap and
	// test commands (evidence/subject-*/invocation.json), read at render
	// time for report.html.
	Invocations []SubjectRun `json:"-"`
}

// ScoringRow is one scoring item in report.json.
type ScoringRow struct {
	Item     rubric.ID   `json:"item"`
	Title    string      `json:"title"`
	Weight   int         `json:"weight"`
	Earned   float64     `json:"earned"`
	Measured float64     `json:"measured"`
	Inputs   []rubric.ID `json:"inputs"`
}

// EntryRow is one criterion, milestone or drill in report.json.
type EntryRow struct {
	ID        rubric.ID       `json:"id"`
	Title     string          `json:"title"`
	Verdict   rubric.Verdict  `json:"verdict"`
	Reason    string          `json:"reason"`
	Category  rubric.Category `json:"category,omitempty"`
	Evidence  []string        `json:"evidence"`
	Reproduce string          `json:"reproduce"`
	// StandIns are the stand-in components this verdict rests on
	// (rubric.DependsOn); empty when it rests on official ones only, or when
	// none of its outcomes was measured.
	StandIns []rubric.Component `json:"stand_ins,omitempty"`
	// Provenance: the components this verdict rests on, each with its
	// provenance label (empty as StandIns is).
	Provenance map[rubric.Component]string `json:"provenance,omitempty"`
	Outcomes   []OutcomeRow                `json:"outcomes"`
}

// OutcomeRow is one recorded outcome of an entry.
type OutcomeRow struct {
	Scenario string          `json:"scenario,omitempty"`
	Verdict  rubric.Verdict  `json:"verdict"`
	Category rubric.Category `json:"category,omitempty"`
	Reason   string          `json:"reason,omitempty"`
}

// Build evaluates outcomes against reg for the meta's target and assembles
// the document. drift may be nil.
func Build(reg *rubric.Registry, meta Meta, outcomes []rubric.Outcome, drift []DriftResult) (Document, rubric.Summary) {
	kind := meta.TargetKind
	if kind == "" {
		kind = rubric.TargetMock
	}
	sum := rubric.Evaluate(reg, kind, outcomes)
	d := Document{
		SchemaVersion: SchemaVersion,
		RunID:         meta.RunID,
		Verdict:       sum.Verdict,
		VerdictReason: sum.Why,
		Aborted:       meta.Aborted,
		Preflight:     meta.Preflight,
		Score:         sum.Score,
		Drift:         drift,
		Target:        meta.Target,
		TargetKind:    kind,
		Subject:       meta.Subject,
		Submission:    meta.Submission,
		Seed:          meta.Seed,
		Tags:          meta.Tags,
		Versions:      meta.Versions,
		StartedAt:     meta.StartedAt.UTC(),
		EndedAt:       meta.EndedAt.UTC(),
	}
	if d.Versions == nil {
		d.Versions = map[string]string{}
	}
	d.StandIns = StandInsOf(d.Versions)
	d.Provenance = ProvenanceOf(d.Versions)
	if d.Drift == nil {
		d.Drift = []DriftResult{}
	}
	exit := sum.ExitCode()
	if meta.Aborted != "" && sum.Verdict == rubric.OverallPassed {
		// A run that ended early cannot have passed.
		d.Verdict = rubric.OverallIncomplete
		d.VerdictReason = "run aborted: " + meta.Aborted
	}
	if meta.Aborted != "" && d.Verdict != rubric.OverallNotPassed {
		exit = rubric.ExitHarnessError
	}
	if meta.Preflight != nil && !meta.Preflight.Passed {
		// Nothing graded on a server that fails its own contract can be trusted.
		d.Verdict = rubric.OverallIncomplete
		d.VerdictReason = "the target failed its preflight (" + meta.Preflight.Reason + "), so nothing was graded on it"
		exit = rubric.ExitIncomplete
	}
	d.ExitCode = exit
	for _, it := range sum.Scoring {
		e, _ := reg.Get(it.Item)
		d.Scoring = append(d.Scoring, ScoringRow{Item: it.Item, Title: e.Title, Weight: it.Weight,
			Earned: it.Earned, Measured: it.Measured, Inputs: append([]rubric.ID{}, e.Inputs...)})
	}
	d.Criteria, d.Milestones, d.Drills = []EntryRow{}, []EntryRow{}, []EntryRow{}
	for _, id := range sum.Order {
		e, _ := reg.Get(id)
		r := sum.Results[id]
		row := EntryRow{ID: id, Title: e.Title, Verdict: r.Verdict, Reason: r.Reason, Category: r.Category,
			Evidence: append([]string{}, r.Evidence...), Reproduce: Reproduce(meta, e), Outcomes: []OutcomeRow{}}
		if measuredSome(r.Outcomes) {
			// A verdict nothing was measured for rests on nothing.
			row.StandIns = rubric.RestsOn(id, d.StandIns)
			row.Provenance = restsOnProvenance(id, d.Provenance)
		}
		for _, o := range r.Outcomes {
			row.Outcomes = append(row.Outcomes, OutcomeRow{Scenario: o.Scenario, Verdict: o.Verdict, Category: o.Category, Reason: o.Reason})
		}
		switch e.Kind {
		case rubric.KindCriterion:
			d.Criteria = append(d.Criteria, row)
		case rubric.KindMilestone:
			d.Milestones = append(d.Milestones, row)
		case rubric.KindDrill:
			d.Drills = append(d.Drills, row)
		}
	}
	sort.SliceStable(d.Drift, func(i, j int) bool { return d.Drift[i].ID < d.Drift[j].ID })
	return d, sum
}

// measuredSome: at least one outcome was measured (not not_measured).
func measuredSome(os []rubric.Outcome) bool {
	for _, o := range os {
		if o.Verdict != rubric.NotMeasured {
			return true
		}
	}
	return false
}

// ComponentKeyPrefix starts a versions key that names one component of a
// real target's stack: "component: <role> image <ref>" → "<id> (official|stand-in)"
// (cmd/acceptance's docker target writes them).
const ComponentKeyPrefix = "component: "

// StandInsOf reads which rubric components are stand-ins from a run's
// versions: a key "component: <role> …" whose value says "(stand-in)", where
// <role> is a rubric.Component ("execd", "egress", "sandbox").
func StandInsOf(versions map[string]string) []rubric.Component {
	var out []rubric.Component
	for _, c := range rubric.Components {
		for k, v := range versions {
			name, ok := strings.CutPrefix(k, ComponentKeyPrefix)
			if ok && strings.Contains(v, "(stand-in)") && (name == string(c) || strings.HasPrefix(name, string(c)+" ")) {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

// ProvenanceOf reads each component's provenance label from a run's
// versions: "component: <role> …" → "<id> (<label>)" (nil when none).
func ProvenanceOf(versions map[string]string) map[rubric.Component]string {
	var out map[rubric.Component]string
	for _, c := range rubric.Components {
		for k, v := range versions {
			name, ok := strings.CutPrefix(k, ComponentKeyPrefix)
			if !ok || (name != string(c) && !strings.HasPrefix(name, string(c)+" ")) {
				continue
			}
			// "<id> (<label>)": the id has no space, the label may hold
			// parentheses ("declares upstream commit X (not verified)").
			i := strings.Index(v, " (")
			if i < 0 || !strings.HasSuffix(v, ")") {
				continue
			}
			if out == nil {
				out = map[rubric.Component]string{}
			}
			out[c] = v[i+2 : len(v)-1]
			break
		}
	}
	return out
}

// restsOnProvenance: the provenance of the components entry id rests on.
func restsOnProvenance(id rubric.ID, prov map[rubric.Component]string) map[rubric.Component]string {
	var out map[rubric.Component]string
	for _, c := range rubric.DependsOn[id] {
		if p, ok := prov[c]; ok {
			if out == nil {
				out = map[rubric.Component]string{}
			}
			out[c] = p
		}
	}
	return out
}

// ProvenanceLine is the row's full component provenance, every component
// its verdict rests on with its label in rubric.Components order, e.g.
// "execd: official; egress: stand-in" ("" when it rests on none).
func (r EntryRow) ProvenanceLine() string {
	var parts []string
	for _, c := range rubric.Components {
		if p, ok := r.Provenance[c]; ok {
			parts = append(parts, string(c)+": "+p)
		}
	}
	return strings.Join(parts, "; ")
}

// StandInNote is the per-entry marker: "rests on the stand-in execd, egress".
func StandInNote(cs []rubric.Component) string {
	if len(cs) == 0 {
		return ""
	}
	return "rests on stand-in " + EntryRow{StandIns: cs}.StandInList() + " (built by this project, not OpenSandbox's)"
}

// StandInList is the row's stand-in components, comma-separated ("" when none).
func (r EntryRow) StandInList() string {
	names := make([]string, len(r.StandIns))
	for i, c := range r.StandIns {
		names[i] = string(c)
	}
	return strings.Join(names, ", ")
}

// Reproduce is the one-line command that re-runs just the scenarios feeding e:
// `grade … DIR` for a submission graded from its directory, `run --subject
// reference` for the bundled reference, `run --subject 'CMD'` for a command.
// The API key is never written: a real target reads it from the environment.
func Reproduce(meta Meta, e rubric.Entry) string {
	cmd := meta.Command
	if cmd == "" {
		cmd = "acceptance"
	}
	target := meta.Target
	if target == "" {
		target = string(rubric.TargetMock)
	}
	verb := "run"
	if meta.SubmissionDir != "" && !meta.Builtin {
		verb = "grade"
	}
	args := []string{cmd, verb, "--target", shellQuote(target)}
	if meta.TargetKind == rubric.TargetReal && target != "docker" { // --target docker makes its own key
		args = append(args, "--api-key", `"$OPEN_SANDBOX_API_KEY"`)
	}
	switch {
	case verb == "grade":
	case meta.Builtin:
		args = append(args, "--subject", "reference")
	case meta.Subject != "":
		args = append(args, "--subject", shellQuote(meta.Subject))
	}
	args = append(args, "--seed", strconv.FormatInt(meta.Seed, 10))
	if tag := e.Tag(); tag != "" {
		args = append(args, "--tags", shellQuote(tag))
	}
	if verb == "grade" {
		args = append(args, shellQuote(meta.SubmissionDir))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for POSIX sh unless it is plainly safe.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
