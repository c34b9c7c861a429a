package review

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Answers is the answers file (`acceptance review --answers review.yaml`):
//
//	reviewer: Jane Doe                # who judged (required, or --reviewer)
//	entries:                          # keyed by rubric ID
//	  cost:            {verdict: passed, points: 7.5, note: "clear table, matches the measured figures"}
//	  maintainability: {verdict: passed}                  # points default to the full weight
//	  M5:              {verdict: failed, points: 1, note: "only the happy path was shown"}
//	  network:                                            # an entry the harness measured: an override
//	    verdict: passed
//	    override_reason: "the probe host was on the course's allow list by mistake"
//	questions:                        # the defense questions, 1–15
//	  1: {verdict: passed}
//	  2: {verdict: failed, points: 0, note: "no reason given for the TTL"}
type Answers struct {
	Reviewer  string            `yaml:"reviewer"`
	Entries   map[string]Answer `yaml:"entries"`
	Questions map[int]Answer    `yaml:"questions"`
}

// Answer is one judgement in the answers file.
type Answer struct {
	Verdict        string   `yaml:"verdict"`
	Points         *float64 `yaml:"points"`
	Note           string   `yaml:"note"`
	OverrideReason string   `yaml:"override_reason"`
}

// ParseAnswers reads an answers file (YAML; JSON is YAML too). Unknown keys
// are errors, so a typo never silently drops a judgement.
func ParseAnswers(r io.Reader) (Answers, error) {
	var a Answers
	b, err := io.ReadAll(r)
	if err != nil {
		return a, err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return a, errors.New("the answers file is empty")
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		return a, fmt.Errorf("answers file: %w", err)
	}
	return a, nil
}

// FieldError is one invalid field of the answers.
type FieldError struct {
	Field string // e.g. "entries.cost.points"
	Msg   string
}

func (e FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks answers against the bundle's measured document and returns
// them as judgments (reviewer and time filled in), or every problem found,
// one FieldError per field.
func Validate(d report.Document, a Answers, now time.Time) (*report.Judgments, error) {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, FieldError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	j := &report.Judgments{Reviewer: strings.TrimSpace(a.Reviewer), Entries: map[rubric.ID]report.Judgment{}, Questions: map[int]report.Judgment{}}
	if j.Reviewer == "" {
		add("reviewer", "required: who judged (or pass --reviewer)")
	} else if c, bad := controlChar(j.Reviewer, false); bad {
		add("reviewer", "contains the control character %q", c)
	}
	items := map[string]Item{}
	for _, it := range Items(d) {
		items[it.Key] = it
	}
	weights := report.EntryWeights(d)

	keys := make([]string, 0, len(a.Entries))
	for k := range a.Entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ans := a.Entries[k]
		field := "entries." + k
		row, ok := entryRow(d, rubric.ID(k))
		w, feeds := weights[rubric.ID(k)]
		if !ok || !feeds {
			add(field, "no such entry in this bundle's score (known: %s)", knownEntries(d))
			continue
		}
		it, reviewable := items[field]
		limit := w.Weight
		if reviewable {
			limit = it.Weight
		}
		jd, ok := checkAnswer(field, ans, limit, add)
		if !ok {
			continue
		}
		mv, mcat, mreason := row.MeasuredPart()
		override := strings.TrimSpace(ans.OverrideReason)
		switch {
		case mv == rubric.NotMeasured && mcat == rubric.CategoryTimeout:
			add(field, "the harness's measurement timed out (%s); a timeout never earns points and cannot be overridden: re-run", mreason)
			continue
		case mv == rubric.HarnessError:
			add(field, "the harness failed to measure it (%s); a harness error says nothing about the submission and cannot be overridden: re-run", mreason)
			continue
		case !reviewable && override == "":
			add(field+".override_reason", "%s was measured by the harness (%s%s); a reviewer's verdict on it is an override and needs a recorded reason",
				k, row.Verdict, reasonSuffix(row.Reason))
			continue
		case !reviewable && row.Verdict == rubric.NotMeasured && row.Category == "":
			add(field, "nothing measured %s in this run (%s); re-run with its scenarios rather than overriding", k, row.Reason)
			continue
		case reviewable && mv == rubric.Failed && override == "" && (jd.Verdict == rubric.Passed || jd.Points > 0):
			add(field+".override_reason", "the harness measured a failure (%s); a reviewer cannot turn a measured failure into a pass or points: give override_reason to override it (it is shown as an override)", mreason)
			continue
		case reviewable && mv == rubric.Flaky && override == "" && (jd.Verdict == rubric.Passed || jd.Points > 0):
			add(field+".override_reason", "the harness measured it flaky (%s); a reviewer cannot turn a flaky measurement into a pass or points: give override_reason to override it (it is shown as an override)", mreason)
			continue
		}
		if override != "" {
			jd.OverrideReason = override
			if reviewable && mv != rubric.Failed && mv != rubric.Flaky {
				// Nothing to override: the reviewer part is judged anyway.
				add(field+".override_reason", "%s has no measured failure (nor flaky measurement) to override; judge it without override_reason", k)
				continue
			}
			if ans.Points == nil && jd.Verdict == rubric.Passed {
				jd.Points = w.Weight
			} else if rubric.PointsExceed(jd.Points, w.Weight) {
				add(field+".points", "%s exceeds the entry's weight %s", rubric.Num(jd.Points), rubric.Num(w.Weight))
				continue
			}
		}
		jd.Reviewer, jd.At = j.Reviewer, now
		j.Entries[rubric.ID(k)] = jd
	}

	qs := make([]int, 0, len(a.Questions))
	for n := range a.Questions {
		qs = append(qs, n)
	}
	sort.Ints(qs)
	for _, n := range qs {
		field := fmt.Sprintf("questions.%d", n)
		it, ok := items[field]
		if !ok {
			if _, m5 := items["entries.M5"]; !m5 {
				add(field, "M5 is not open to review in this bundle (nothing recorded its reviewer part), so its defense questions cannot be judged")
			} else {
				add(field, "no such defense question (1–%d)", len(rubric.DefenseQuestions))
			}
			continue
		}
		if it.Measured == rubric.Failed || it.Measured == rubric.Flaky || it.Measured == rubric.HarnessError || it.Category == rubric.CategoryTimeout {
			add(field, "M5's measured part is %s; its defense questions earn nothing unless M5 is overridden", it.Measured)
			continue
		}
		jd, ok := checkAnswer(field, a.Questions[n], it.Weight, add)
		if !ok {
			continue
		}
		jd.Reviewer, jd.At = j.Reviewer, now
		j.Questions[n] = jd
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	j.UpdatedAt = now
	return j, nil
}

// checkAnswer validates verdict, points and note of one answer against its
// weight limit.
func checkAnswer(field string, ans Answer, limit float64, add func(string, string, ...any)) (report.Judgment, bool) {
	var jd report.Judgment
	ok := true
	switch v := rubric.Verdict(strings.TrimSpace(ans.Verdict)); v {
	case rubric.Passed, rubric.Failed:
		jd.Verdict = v
	case "":
		add(field+".verdict", "required: passed or failed")
		ok = false
	default:
		add(field+".verdict", "%q is not passed or failed", ans.Verdict)
		ok = false
	}
	jd.Note = strings.TrimSpace(ans.Note)
	for _, f := range [][2]string{{"note", jd.Note}, {"override_reason", ans.OverrideReason}} {
		if c, bad := controlChar(f[1], true); bad {
			add(field+"."+f[0], "contains the control character %q", c)
			ok = false
		}
	}
	switch {
	case ans.Points != nil && (math.IsNaN(*ans.Points) || math.IsInf(*ans.Points, 0)):
		add(field+".points", "%v is not a number of points", *ans.Points)
		ok = false
	case ans.Points == nil && jd.Verdict == rubric.Passed:
		jd.Points = rubric.Round2(limit)
	case ans.Points == nil:
		jd.Points = 0
	case *ans.Points < 0:
		add(field+".points", "%s is negative", rubric.Num(*ans.Points))
		ok = false
	case rubric.PointsExceed(*ans.Points, limit) && strings.TrimSpace(ans.OverrideReason) == "":
		add(field+".points", "%s exceeds the entry's weight %s", rubric.Num(*ans.Points), rubric.Num(limit))
		ok = false
	default:
		jd.Points = *ans.Points
	}
	if ok && jd.Verdict == rubric.Failed && jd.Note == "" && !strings.HasPrefix(field, "questions.") {
		add(field+".note", "a failed verdict needs a note saying what the submission did")
		ok = false
	}
	return jd, ok
}

// controlChar finds a control character (a NUL, an escape sequence's ESC…)
// in s, which would land raw in report.md, report.html and results.json;
// multiline allows newlines and tabs (a note may span lines).
func controlChar(s string, multiline bool) (rune, bool) {
	for _, r := range s {
		if multiline && (r == '\n' || r == '\r' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) {
			return r, true
		}
	}
	return 0, false
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	if len(r) > 160 {
		r = r[:157] + "…"
	}
	return ": " + r
}
