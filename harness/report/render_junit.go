package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut *junitCDATA   `xml:"system-out,omitempty"`
}

type junitCDATA struct {
	Text string `xml:",cdata"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

// WriteJUnit renders junit.xml: one testcase per criterion, milestone and
// drill. not_measured → <skipped message="…"> (never an error), failed →
// <failure>, flaky → <failure type="flaky">, harness_error → <error>.
func WriteJUnit(w io.Writer, d Document) error {
	top := junitSuites{Name: "acceptance " + d.RunID}
	props := []junitProperty{
		{Name: "verdict", Value: string(d.Verdict)},
		{Name: "score", Value: fmt.Sprintf("%s of %s measured (measured %s of %s)", rubric.Num(d.Score.Earned),
			rubric.Num(d.Score.Measured), rubric.Num(d.Score.Measured), rubric.Num(d.Score.Total))},
		{Name: "target", Value: d.Target},
		{Name: "subject", Value: d.Subject},
		{Name: "seed", Value: fmt.Sprint(d.Seed)},
	}
	if len(d.StandIns) > 0 {
		props = append(props, junitProperty{Name: "stand_ins", Value: EntryRow{StandIns: d.StandIns}.StandInList()})
	}
	if f := d.Final; f != nil {
		props = append(props,
			junitProperty{Name: "final_score", Value: fmt.Sprintf("%s of %s (measured %s, judged %s, overrides %s; reviewer %s)",
				rubric.Num(f.Score), rubric.Num(f.Total), rubric.Num(f.MeasuredPoints), rubric.Num(f.JudgedPoints), rubric.Num(f.OverridePoints), f.Reviewer)},
			junitProperty{Name: "final_verdict", Value: string(f.Verdict)})
	}
	for _, grp := range []struct {
		name, class string
		rows        []EntryRow
	}{{"criteria", "acceptance.criterion", d.Criteria}, {"milestones", "acceptance.milestone", d.Milestones}, {"drills", "acceptance.drill", d.Drills}} {
		s := junitSuite{Name: grp.name, Properties: props}
		if !d.StartedAt.IsZero() {
			s.Timestamp = d.StartedAt.Format("2006-01-02T15:04:05Z")
		}
		for _, r := range grp.rows {
			c := junitCase{Name: string(r.ID) + ": " + r.Title, Classname: grp.class, SystemOut: &junitCDATA{Text: caseDetail(r)}}
			switch r.Verdict {
			case rubric.Failed:
				c.Failure = &junitMessage{Message: withStandIn(r.Reason, r), Type: "failed", Text: caseDetail(r)}
				s.Failures++
			case rubric.Flaky:
				// Passed only some of the time: a failure, typed so CI tools can tell.
				c.Failure = &junitMessage{Message: r.Reason, Type: "flaky", Text: caseDetail(r)}
				s.Failures++
			case rubric.HarnessError:
				c.Error = &junitMessage{Message: withStandIn(r.Reason, r), Type: "harness_error", Text: caseDetail(r)}
				s.Errors++
			case rubric.NotMeasured:
				msg := "not measured"
				if r.Category != "" {
					msg += " (" + string(r.Category) + ")"
				}
				c.Skipped = &junitMessage{Message: withStandIn(msg+": "+r.Reason, r)}
				s.Skipped++
			}
			s.Cases = append(s.Cases, c)
			s.Tests++
		}
		top.Tests += s.Tests
		top.Failures += s.Failures
		top.Errors += s.Errors
		top.Skipped += s.Skipped
		top.Suites = append(top.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(top); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// withStandIn appends the stand-in marker to a message, when the row has one.
func withStandIn(msg string, r EntryRow) string {
	if len(r.StandIns) == 0 {
		return msg
	}
	return msg + " [" + StandInNote(r.StandIns) + "]"
}

func caseDetail(r EntryRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict)
	if r.Category != "" {
		fmt.Fprintf(&b, "category: %s\n", r.Category)
	}
	fmt.Fprintf(&b, "reason: %s\n", r.Reason)
	if len(r.StandIns) > 0 {
		fmt.Fprintf(&b, "stand-in: %s\n", StandInNote(r.StandIns))
	}
	for _, e := range r.Evidence {
		fmt.Fprintf(&b, "evidence: %s\n", e)
	}
	fmt.Fprintf(&b, "reproduce: %s\n", r.Reproduce)
	return b.String()
}
