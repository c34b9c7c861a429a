package steps

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/owntests"
	"github.com/osb-capstone/acceptance/harness/readme"
	"github.com/osb-capstone/acceptance/harness/subfile"
)

// M4's measurable part of maintainability: the submission's own tests run and
// pass (at least one unit and one integration test), and its README fits one
// page and names its commands. Whether another person can reproduce the run
// from them stays a reviewer's judgement.

// testTimeout bounds one test command.
const testTimeout = 5 * time.Minute

func runTests(ctx context.Context) error {
	s := state(ctx)
	m := s.env.sub().Manifest
	var missing []string
	if m.Test.Unit == "" {
		missing = append(missing, s.env.sub().Missing("test.unit"))
	}
	if m.Test.Integration == "" {
		missing = append(missing, s.env.sub().Missing("test.integration"))
	}
	if len(missing) > 0 {
		return failf("%s, so no test of it ran", strings.Join(missing, "; "))
	}
	for _, t := range []struct{ field, cmd string }{{"test.unit", m.Test.Unit}, {"test.integration", m.Test.Integration}} {
		inv := s.env.invoke(ctx, t.field, t.cmd, "subject-"+t.field, s.env.opt.RunID+"-"+strings.ReplaceAll(t.field, ".", "-"), testTimeout)
		s.invs = append(s.invs, inv)
		s.addEvidence(inv.evidence()...)
		// What the server saw from the command's key (the sandboxes its
		// integration test created): evidence and report.html's timeline of
		// the command. The tests' verdict does not depend on it.
		if inv.Ran() {
			if _, err := inv.Saw(ctx); err != nil {
				s.note("what the server saw of %s could not be read: %v", t.field, err)
			} else {
				s.addEvidence(filepath.Join(inv.RelDir, "server-saw.json"))
			}
		}
	}
	return nil
}

func testsPassed(ctx context.Context, minUnit, minIntegration int) error {
	s := state(ctx)
	var problems, notes []string
	for i, inv := range s.invs {
		want := minUnit
		if i == 1 {
			want = minIntegration
		}
		if err := inv.Judge(ctx); err != nil {
			return err
		}
		out := readAll(inv.Res.StdoutPath) + "\n" + readAll(inv.Res.StderrPath)
		c, ok := owntests.JUnit(inv.OutDir)
		if !ok {
			c, ok = owntests.Summary(out)
		}
		switch {
		case inv.Res.ExitCode != 0:
			problems = append(problems, fmt.Sprintf("%s exited %d (%s)", inv.Field, inv.Res.ExitCode, clip(strings.TrimSpace(tailString(out, 300)), 300)))
		case !ok:
			problems = append(problems, fmt.Sprintf("%s exited 0 but neither wrote JUnit XML into {out} nor printed a summary line the harness can read (pytest, unittest, go test -v, \"N passed, M failed\")", inv.Field))
		case c.Failed > 0:
			problems = append(problems, fmt.Sprintf("%s: %d test(s) failed (%s)", inv.Field, c.Failed, c.Source))
		case c.Passed < want:
			problems = append(problems, fmt.Sprintf("%s passed %d test(s), at least %d needed (%s)", inv.Field, c.Passed, want, c.Source))
		case inv.Field == "test.integration":
			saw, err := inv.Saw(ctx)
			if err != nil {
				return harnessf("reading what the server saw of %s: %v", inv.Field, err)
			}
			touched, why := owntests.TouchedSandbox(saw, s.env.mock(), string(s.env.opt.Target.Kind))
			if !touched {
				problems = append(problems, fmt.Sprintf("%s reports %d passed (%s), but %s: an integration test creates a sandbox, runs a command in it and destroys it", inv.Field, c.Passed, c.Source, why))
				continue
			}
			notes = append(notes, fmt.Sprintf("%s: %d passed (%s); %s", inv.Field, c.Passed, c.Source, why))
		default:
			notes = append(notes, fmt.Sprintf("%s: %d passed (%s)", inv.Field, c.Passed, c.Source))
		}
	}
	if len(problems) > 0 {
		return failf("%s", strings.Join(problems, "; "))
	}
	s.note("%s", strings.Join(notes, "; "))
	return nil
}

func readmeFits(ctx context.Context) error {
	s := state(ctx)
	sub := s.env.sub()
	if sub.Dir == "" {
		return failf("the submission is a bare --subject command: it has no directory, so no README")
	}
	msg, err := readme.Check(sub)
	if err != nil {
		return err
	}
	s.note("%s", msg)
	return nil
}

// readAll reads a captured output for text a step looks for (subfile.CapturedText).
func readAll(p string) string { return subfile.CapturedText(p) }

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
