package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/osb-capstone/acceptance/harness/report"
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
	// Properties: the components the verdict rests on, each with its
	// provenance label ("provenance: execd" → "official").
	Properties *junitProps `xml:"properties,omitempty"`
	SystemOut  *junitCDATA `xml:"system-out,omitempty"`
}

// junitProps is a test case's <properties> (absent when it has none).
type junitProps struct {
	Property []junitProperty `xml:"property"`
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
func WriteJUnit(w io.Writer, d report.Document) error {
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
		props = append(props, junitProperty{Name: "stand_ins", Value: report.EntryRow{StandIns: d.StandIns}.StandInList()})
	}
	if f := d.Final; f != nil {
		props = append(props,
			junitProperty{Name: "final_score", Value: fmt.Sprintf("%s of %s (measured %s, judged %s, overrides %s; reviewer %s)",
				rubric.Num(f.Score), rubric.Num(f.Total), rubric.Num(f.MeasuredPoints), rubric.Num(f.JudgedPoints), rubric.Num(f.OverridePoints), f.Reviewer)},
			junitProperty{Name: "final_verdict", Value: string(f.Verdict)})
	}
	for _, grp := range []struct {
		name, class string
		rows        []report.EntryRow
	}{{"criteria", "acceptance.criterion", d.Criteria}, {"milestones", "acceptance.milestone", d.Milestones}, {"drills", "acceptance.drill", d.Drills}} {
		s := junitSuite{Name: grp.name, Properties: props}
		if !d.StartedAt.IsZero() {
			s.Timestamp = d.StartedAt.Format("2006-01-02T15:04:05Z")
		}
		for _, r := range grp.rows {
			c := junitCase{Name: string(r.ID) + ": " + r.Title, Classname: grp.class, SystemOut: &junitCDATA{Text: caseDetail(r)}}
			for _, comp := range rubric.Components {
				if p, ok := r.Provenance[comp]; ok {
					if c.Properties == nil {
						c.Properties = &junitProps{}
					}
					c.Properties.Property = append(c.Properties.Property, junitProperty{Name: "provenance: " + string(comp), Value: p})
				}
			}
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
	top.clean()
	return InertPage(w, func(w io.Writer) error {
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
	})
}

// withStandIn appends the stand-in marker to a message, when the row has one.
func withStandIn(msg string, r report.EntryRow) string {
	if len(r.StandIns) == 0 {
		return msg
	}
	return msg + " [" + report.StandInNote(r.StandIns) + "]"
}

func caseDetail(r report.EntryRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "verdict: %s\n", r.Verdict)
	if r.Category != "" {
		fmt.Fprintf(&b, "category: %s\n", r.Category)
	}
	fmt.Fprintf(&b, "reason: %s\n", r.Reason)
	if len(r.StandIns) > 0 {
		fmt.Fprintf(&b, "stand-in: %s\n", report.StandInNote(r.StandIns))
	}
	if p := r.ProvenanceLine(); p != "" {
		fmt.Fprintf(&b, "rests on: %s\n", p)
	}
	for _, e := range r.Evidence {
		fmt.Fprintf(&b, "evidence: %s\n", e)
	}
	fmt.Fprintf(&b, "reproduce: %s\n", r.Reproduce)
	return b.String()
}

// clean makes every string written into junit.xml valid XML text. Titles,
// reasons, evidence paths and the subject are partly subject-derived, and
// encoding/xml writes CDATA (system-out, failure bodies) verbatim: a control
// character, a byte that is not UTF-8 or a non-character there made the whole
// file unparseable for CI. Attribute values are cleaned too, so that what
// they show is the same visible escape rather than the encoder's U+FFFD.
// ("]]>" inside CDATA is split by encoding/xml itself.)
func (s *junitSuites) clean() {
	s.Name = xmlText(s.Name)
	for i := range s.Suites {
		st := &s.Suites[i]
		st.Name, st.Timestamp = xmlText(st.Name), xmlText(st.Timestamp)
		props := make([]junitProperty, len(st.Properties)) // shared between suites: copy, never clean in place twice
		for j, p := range st.Properties {
			props[j] = junitProperty{Name: xmlText(p.Name), Value: xmlText(p.Value)}
		}
		st.Properties = props
		for j := range st.Cases {
			c := &st.Cases[j]
			c.Name, c.Classname = xmlText(c.Name), xmlText(c.Classname)
			for _, m := range []*junitMessage{c.Failure, c.Error, c.Skipped} {
				if m != nil {
					m.Message, m.Type, m.Text = xmlText(m.Message), xmlText(m.Type), xmlText(m.Text)
				}
			}
			if c.SystemOut != nil {
				c.SystemOut.Text = xmlText(c.SystemOut.Text)
			}
			if c.Properties != nil {
				for k, p := range c.Properties.Property {
					c.Properties.Property[k] = junitProperty{Name: xmlText(p.Name), Value: xmlText(p.Value)}
				}
			}
		}
	}
}

// xmlText replaces what XML 1.0 cannot carry (bytes that are not UTF-8,
// control characters other than tab, newline and carriage return (C1 and
// DEL included), surrogates, U+FFFE and U+FFFF) with a visible Go-style escape (\x1b,
// \xff, \ufffe), so the text stays readable and the file parses.
func xmlText(s string) string {
	ok := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || !xmlChar(r) {
			ok = false
			break
		}
		i += n
	}
	if ok {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case !xmlChar(r) && r < 0x100:
			fmt.Fprintf(&b, "\\x%02x", r)
		case !xmlChar(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
		i += n
	}
	return b.String()
}

// xmlChar is XML 1.0's Char production, less DEL and the C1 controls
// (allowed but discouraged, and invisible to a reader).
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		(r >= 0x20 && r < 0x7F) || (r > 0x9F && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}
