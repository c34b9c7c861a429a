package steps

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"

	"github.com/osb-capstone/acceptance/fixtures"
	"github.com/osb-capstone/acceptance/harness/regularfile"
	"github.com/osb-capstone/acceptance/harness/subfile"
)

// Steps that run the subject and check its outputs (M2 function).

func registerSubjectSteps(sc registrar) {
	sc.Step(`^the subject is run on fixture "([^"]*)"$`, runOnFixture)
	sc.Step(`^the subject is run on a generated CSV of at least 50 MB$`, runOnLarge)
	sc.Step(`^the subject exited 0$`, subjectExited0)
	sc.Step(`^the subject exited non-zero$`, subjectExitedNonZero)
	sc.Step(`^the subject wrote a non-empty report\.md$`, reportNonEmpty)
	sc.Step(`^the subject's chart\.png decodes as a PNG of sensible size$`, chartIsPNG)
	sc.Step(`^the subject's summary\.json validates against the schema$`, summaryValid)
}

func runOnFixture(ctx context.Context, name string) error {
	s := state(ctx)
	if s.drill != nil {
		s.run = s.env.runDrill(ctx, s, name)
	} else {
		s.run = s.env.runFixture(ctx, name)
	}
	s.addEvidence(s.run.evidence()...)
	return nil
}

func runOnLarge(ctx context.Context) error {
	s := state(ctx)
	s.run = s.env.runFixture(ctx, "large")
	s.addEvidence(s.run.evidence()...)
	return nil
}

// generateLarge writes the manifest's large CSV (≥ 50 MB, streamed) into dir.
func (e *Env) generateLarge(dir string) (string, string, error) {
	m, err := fixtures.Load()
	if err != nil {
		return "", "", err
	}
	var p string
	if e.opt.Inputs != nil {
		p, err = e.opt.Inputs.LargeCSV(dir) // generated once per session, copied
	} else {
		p, _, err = fixtures.GenerateLargeFile(dir)
	}
	if err != nil {
		return "", "", err
	}
	return p, m.Large.Question, nil
}

// ran returns the scenario's subject run, or an error saying why there is
// none, or why it cannot be judged as the submission's (Env.usable).
func ran(ctx context.Context) (*scenario, *subjectRun, error) {
	s := state(ctx)
	if s.run == nil {
		return s, nil, harnessf("the subject was not run in this scenario")
	}
	if err := s.run.judge(ctx); err != nil {
		return s, s.run, err
	}
	return s, s.run, nil
}

func subjectExited0(ctx context.Context) error {
	_, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if r.Res.ExitCode != 0 {
		return failf("the subject exited %d, want 0 (stderr: %s)", r.Res.ExitCode, tailFile(r.Res.StderrPath, 600))
	}
	return nil
}

func subjectExitedNonZero(ctx context.Context) error {
	_, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if r.Res.ExitCode == 0 {
		return failf("the subject exited 0; this failure must be a non-zero exit")
	}
	return nil
}

func reportNonEmpty(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	b, err := subfile.Read(filepath.Join(r.OutDir, "report.md"), "{out}/report.md", subfile.ReportMD)
	if err != nil {
		return failf("%v", err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return failf("report.md is empty")
	}
	s.addEvidence(filepath.Join(r.RelDir, "out", "report.md"))
	return nil
}

func chartIsPNG(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	f, st, err := regularfile.Open(filepath.Join(r.OutDir, "chart.png"))
	if err != nil {
		if errors.Is(err, regularfile.ErrSymlink) {
			return failf("{out}/chart.png is a symbolic link; the grader reads only regular files and never follows a link")
		}
		return failf("%s", subfile.TrimPath(err, filepath.Join(r.OutDir, "chart.png"), "{out}/chart.png"))
	}
	defer f.Close()
	if st.Size() > subfile.ChartPNG {
		return failf("{out}/chart.png is %d bytes, over the grader's cap of %d bytes for it", st.Size(), subfile.ChartPNG)
	}
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		return failf("chart.png does not decode as a PNG: %v", err)
	}
	if cfg.Width < 200 || cfg.Height < 150 || cfg.Width > 10000 || cfg.Height > 10000 {
		return failf("chart.png is %dx%d pixels; a readable chart is between 200x150 and 10000x10000", cfg.Width, cfg.Height)
	}
	if _, err := f.Seek(0, 0); err == nil {
		if _, err := png.Decode(f); err != nil {
			return failf("chart.png is a truncated or corrupt PNG: %v", err)
		}
	}
	s.addEvidence(filepath.Join(r.RelDir, "out", "chart.png"))
	s.note("chart %dx%d", cfg.Width, cfg.Height)
	return nil
}

func summaryValid(ctx context.Context) error {
	s, r, err := ran(ctx)
	if err != nil {
		return err
	}
	if r.sumErr != nil {
		return failf("summary.json: %v", r.sumErr)
	}
	if r.sum == nil || len(r.sumErrs) > 0 {
		var msgs []string
		for _, v := range r.sumErrs {
			msgs = append(msgs, v.String())
		}
		if r.sum == nil && len(msgs) == 0 {
			msgs = append(msgs, "not JSON")
		}
		return failf("summary.json does not validate: %s", strings.Join(msgs, "; "))
	}
	s.addEvidence(filepath.Join(r.RelDir, "out", "summary.json"))
	return nil
}

// tailFile returns the last n bytes of a file, for failure messages: an
// excerpt of what the subject wrote, quoted (quoted).
func tailFile(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	b := make([]byte, st.Size()-off)
	_, _ = f.ReadAt(b, off)
	return quoted(strings.TrimSpace(string(b)))
}

var _ = fmt.Sprintf
