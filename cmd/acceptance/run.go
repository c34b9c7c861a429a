package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/osb-capstone/acceptance/features"
	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/dockertarget"
	"github.com/osb-capstone/acceptance/harness/inert"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/submission"
	"github.com/osb-capstone/acceptance/steps"
)

// runConfig is `acceptance run`'s flags.
type runConfig struct {
	// stubsStarted is a test's seam (core.Config.StubsStarted), set only
	// through gradeWith; the command line never sets it.
	stubsStarted func(upstreams map[string]string)

	target         string
	apiKey         string
	subject        string
	tags           string
	out            string
	seed           int64
	concurrency    int
	subjectTimeout time.Duration
	insecure       bool
	baselines      string
	baselinesSet   bool // --baselines was given on the command line
	wheels         string
	stateDir       string
	serverVersion  string // --target docker
	// --target docker: image overrides (--execd-image, --egress-image, --sandbox-image).
	execdImage, egressImage, sandboxImage string
	// dockerVersions receive the docker target's components for the report header.
	dockerVersions map[string]string
	parallel       int    // grade: submissions graded at once
	shard          string // grade: "K/N", only this share of the submissions
	verbose        bool   // grade: per-scenario lines on the output too
	repeat         int
	// noConfinement: --insecure-no-confinement (submission commands run
	// unconfined, as the grader's own processes).
	noConfinement bool
	// confinement: --confinement (auto, full, uid, none; default
	// $ACCEPTANCE_CONFINEMENT, else auto): the level commands run at.
	confinement       string
	submissionTimeout time.Duration
}

func parseRunFlags(args []string, stderr io.Writer) (*runConfig, error) {
	c, rest, err := parseFlags("run", args, stderr)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", rest)
	}
	return c, nil
}

// parseFlags parses the flags `run` and `grade` share (grade has no
// --subject; its submissions are the arguments) and returns the arguments.
func parseFlags(cmd string, args []string, stderr io.Writer) (*runConfig, []string, error) {
	c := &runConfig{subject: "reference"}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.target, "target", "mock", `"mock" (the bundled server, started in-process), "docker" (a real OpenSandbox stood up on Docker) or the URL of a real OpenSandbox server`)
	fs.StringVar(&c.serverVersion, "server-version", dockertarget.DefaultServerVersion, "--target docker: the opensandbox-server version from PyPI (one without a committed pin is pinned at run time)")
	fs.StringVar(&c.execdImage, "execd-image", "", "--target docker: the execd image to use (default: the one the server version names, if the engine has it or can pull it, else a stand-in)")
	fs.StringVar(&c.egressImage, "egress-image", "", "--target docker: the egress sidecar image to use (default: the one the server version names, if the engine has it or can pull it, else a stand-in)")
	fs.StringVar(&c.sandboxImage, "sandbox-image", "", "--target docker: the sandbox image, tagged python:3.12 for the run (default: built here from Debian packages)")
	fs.StringVar(&c.apiKey, "api-key", os.Getenv("OPEN_SANDBOX_API_KEY"), "API key of a real server (default $OPEN_SANDBOX_API_KEY); the bundled server makes its own")
	if cmd == "run" {
		fs.StringVar(&c.subject, "subject", "reference", `"reference" or a command template with {csv} {csv_url} {question} {out} {acceptance} (a run-only submission)`)
	} else {
		fs.IntVar(&c.parallel, "parallel", 2, "submissions graded at once (they share one bundled server; each is isolated by its own API keys)")
		fs.StringVar(&c.shard, "shard", "", "K/N: grade only the K-th of N stable shares of the listed submissions (by each directory's name); merge the shards' --out with `acceptance class`")
		fs.BoolVar(&c.verbose, "verbose", false, "print every submission's per-scenario lines too (they always go to its bundle's progress.log)")
	}
	fs.StringVar(&c.tags, "tags", "", `godog tag expression, e.g. "@milestone:M0,@milestone:M1" or "~@large"`)
	if cmd == "run" {
		fs.StringVar(&c.out, "out", "", "report bundle directory (default reports/<run-id>, with reports/latest pointing at it)")
	} else {
		fs.StringVar(&c.out, "out", "", "class directory: one bundle per submission plus the class summary (default reports/<run-id>, with reports/latest pointing at it)")
	}
	fs.Int64Var(&c.seed, "seed", 0, "scenario order seed (0 = derived from the clock; printed in the report)")
	fs.IntVar(&c.concurrency, "concurrency", 1, "scenarios run at once")
	fs.DurationVar(&c.subjectTimeout, "subject-timeout", 10*time.Minute, "wall-clock limit of one subject run (its process group is killed after it)")
	fs.BoolVar(&c.insecure, "insecure-no-isolation", false, "let the bundled server run without namespaces (egress through a proxy only: the verdicts that need network-layer enforcement are then not measured)")
	fs.StringVar(&c.baselines, "baselines", report.DefaultBaselineDir, "evidence baseline directory for drift detection")
	fs.StringVar(&c.wheels, "wheels", ".cache/wheels", "wheels served by the stub package index (make deps fills it; default .cache/wheels here, else in the checkout the binary was built in)")
	fs.StringVar(&c.stateDir, "state-dir", "", "bundled server state directory (default a temporary directory)")
	fs.BoolVar(&c.noConfinement, "insecure-no-confinement", false, "run the submission's commands unconfined, with the grader's uid, namespaces and network (docs/confinement.md); every report says so")
	fs.StringVar(&c.confinement, "confinement", envOr(envConfinement, "auto"), "confinement level of the submission's commands: auto (the strongest this machine allows), full, uid or none (docs/confinement.md); default $"+envConfinement+", else auto")
	fs.DurationVar(&c.submissionTimeout, "submission-timeout", core.DefaultSubmissionTimeout, "summed wall-clock limit of all of one submission's commands")
	fs.IntVar(&c.repeat, "repeat", 1, "run every scenario N times; an entry a scenario passed only some of the time is flaky: never passed, no points, and the run is not passed (exit 1)")
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, nil, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	c.baselinesSet = given["baselines"]
	// A flag that cannot apply to the chosen target is a mistake to say, not
	// to ignore: the grade would not be what the command line suggests.
	if given["api-key"] && (c.target == "mock" || c.target == "docker") {
		return nil, nil, fmt.Errorf("--api-key is for a URL target only; --target %s makes its own key (leave --api-key out)", c.target)
	}
	if given["server-version"] && c.target != "docker" {
		return nil, nil, fmt.Errorf("--server-version applies to --target docker only, not --target %s", c.target)
	}
	if !given["wheels"] {
		w, err := defaultWheels()
		if err != nil {
			return nil, nil, err
		}
		c.wheels = w
	}
	if err := checkTags(c.tags); err != nil {
		return nil, nil, err
	}
	if l, err := confine.ParseLevel(c.confinement); err != nil {
		return nil, nil, fmt.Errorf("--confinement: %w", err)
	} else if c.noConfinement && l != "" && l != confine.LevelNone {
		return nil, nil, fmt.Errorf("--insecure-no-confinement and --confinement %s contradict each other", l)
	}
	if n := tagsPrecedenceNote(c.tags); n != "" {
		fmt.Fprintln(stderr, "acceptance: note: "+n)
	}
	if c.concurrency < 1 {
		return nil, nil, fmt.Errorf("--concurrency must be at least 1")
	}
	if cmd != "run" && c.parallel < 1 {
		return nil, nil, fmt.Errorf("--parallel must be at least 1, got %d", c.parallel)
	}
	if c.shard != "" {
		if _, err := submission.ParseShard(c.shard); err != nil {
			return nil, nil, err
		}
	}
	if c.target == "docker" {
		if !dockertarget.ValidVersion(c.serverVersion) {
			return nil, nil, fmt.Errorf("--server-version %q is not a version", c.serverVersion)
		}
		if err := dockertarget.CheckPairing(c.serverVersion, c.execdImage, c.egressImage); err != nil {
			return nil, nil, err
		}
	} else if c.execdImage != "" || c.egressImage != "" || c.sandboxImage != "" {
		return nil, nil, fmt.Errorf("--execd-image, --egress-image and --sandbox-image are for --target docker")
	}
	if c.target != "docker" && c.target != "mock" {
		u, err := url.Parse(c.target)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, nil, fmt.Errorf(`--target must be "mock" or an http(s) URL, got %q`, c.target)
		}
		if c.apiKey == "" {
			return nil, nil, fmt.Errorf("--target %s needs --api-key (or OPEN_SANDBOX_API_KEY)", c.target)
		}
	}
	if err := checkFlagValues(c); err != nil {
		return nil, nil, err
	}
	if c.seed == 0 {
		c.seed = time.Now().UnixNano() % 1_000_000
	}
	return c, rest, nil
}

// parseInterspersed parses flags wherever they stand among the arguments
// (`grade DIR --out X` as well as `grade --out X DIR`) and returns the
// arguments in order; everything after a bare "--" is an argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		// fs.Parse stops at the first non-flag, or just after a "--".
		left := fs.Args()
		if consumed := args[:len(args)-len(left)]; len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return rest, nil
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

func runMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseRunFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "acceptance run: %s\n", inert.Line(err.Error()))
		return 2
	}
	sub, err := submission.FromCommand(cfg.subject)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance run: --subject: %s\n", inert.Line(err.Error()))
		return 2
	}
	if err := checkProgram(sub); err != nil {
		fmt.Fprintf(stderr, "acceptance run: --subject: %s\n", inert.Line(err.Error()))
		return 2
	}
	if err := checkURLTarget(context.Background(), cfg); err != nil {
		fmt.Fprintf(stderr, "acceptance run: %s\n", inert.Line(err.Error()))
		return 2
	}
	if err := checkWheels(cfg); err != nil {
		fmt.Fprintf(stderr, "acceptance run: %s\n", inert.Line(err.Error()))
		return 2
	}
	out := cfg.out
	if out == "" {
		out = filepath.Join("reports", time.Now().UTC().Format("20060102T150405Z")+"-"+randomHex(3))
	}
	// Absolute: subjects run in their own working directory, and {csv}/{out} must still name the bundle's files.
	if out, err = filepath.Abs(out); err != nil {
		fmt.Fprintf(stderr, "acceptance run: --out: %s\n", inert.Line(err.Error()))
		return 2
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintf(stderr, "acceptance run: %s\n", inert.Line(err.Error()))
		return 2
	}
	if err := closeOut(cfg, out); err != nil {
		fmt.Fprintf(stderr, "acceptance run: %s\n", inert.Line(err.Error()))
		return 2
	}
	if cfg.out == "" {
		linkLatest(out)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sess, code := openSession(ctx, "run", cfg, stderr)
	if sess == nil {
		return code
	}
	defer sess.Close()
	reportPreflight(stdout, sess)
	fmt.Fprintf(stdout, "acceptance run: target %s, subject %s, seed %d, report %s\n", targetName(cfg), inert.Line(cfg.subject), cfg.seed, out)
	rp := newRunProgress(stdout, countScenarios(cfg.tags)*max(cfg.repeat, 1))
	rp.out.Start(time.Second)
	g := sess.Grade(ctx, sub, out, newSuite, rp)
	rp.out.Close()
	if g.Err != nil && g.Doc.RunID == "" {
		fmt.Fprintf(stderr, "acceptance run: %s\n", inert.Line(g.Err.Error()))
		return 2
	}
	fmt.Fprintln(stdout, report.SummaryLine(g.Doc))
	return g.Doc.ExitCode
}

// openSession checks the features against the rubric, then
// starts the grading session (stubs, target, preflight). On failure it returns
// nil and the exit code.
func openSession(ctx context.Context, cmd string, cfg *runConfig, stderr io.Writer) (*core.Session, int) {
	if problems, _, err := rubric.CheckFS(rubric.Course, features.FS); err != nil || len(problems) > 0 {
		fmt.Fprintf(stderr, "acceptance %s: the features and the rubric disagree: %v %s\n", cmd, err, strings.Join(problems, "; "))
		return nil, 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "acceptance %s: %v\n", cmd, err)
		return nil, 2
	}
	if _, _, err := confinementLevel(cfg); err != nil {
		fmt.Fprintf(stderr, "acceptance %s: %v\n", cmd, err)
		return nil, 2
	}
	kind := rubric.TargetMock
	if cfg.target != "mock" {
		kind = rubric.TargetReal
	}
	keys, err := report.DefaultJournalKeyDir()
	if err != nil {
		fmt.Fprintf(stderr, "acceptance %s: %v\n", cmd, err)
		return nil, 2
	}
	vers := versions()
	cfg.dockerVersions = vers // the docker target adds its components (the map is copied into each bundle later)
	sess, err := core.Open(ctx, core.Config{
		Target: cfg.target, TargetKind: kind, Tags: cfg.tags, Seed: cfg.seed, Concurrency: cfg.concurrency,
		SubjectTimeout: cfg.subjectTimeout, Baselines: baselines(cfg.baselines, cfg.target), Wheels: cfg.wheels,
		SelfExe: self, Versions: vers, Repeat: cfg.repeat, JournalKeys: keys,
		Confine: confineConfig(cfg), Unconfined: unconfinedWhy(cfg), SubmissionTimeout: cfg.submissionTimeout,
		StubsStarted: cfg.stubsStarted,
	}, func(ctx context.Context, upstreams map[string]string) (core.StartedTarget, error) {
		return startTarget(ctx, cfg, upstreams, stderr)
	})
	if err != nil {
		fmt.Fprintf(stderr, "acceptance %s: %v\n", cmd, err)
		return nil, 2
	}
	return sess, 0
}

// newSuite builds one submission's scenario set.
func newSuite(in core.SuiteInput) (core.Suite, error) { return steps.NewEnv(in) }

func targetName(cfg *runConfig) string {
	if cfg.target == "mock" {
		return "mock (bundled server)"
	}
	if cfg.target == "docker" {
		return "docker (opensandbox-server==" + cfg.serverVersion + " on Docker)"
	}
	return cfg.target
}

// reportPreflight prints the target preflight's outcome.
func reportPreflight(w io.Writer, sess *core.Session) {
	p := sess.Preflight()
	if p == nil {
		return
	}
	if p.Passed {
		fmt.Fprintf(w, "target preflight passed (%d checks; not scored)\n", len(p.Checks))
		return
	}
	fmt.Fprintf(w, "target preflight FAILED: %s; nothing is graded on this target (incomplete, exit 3)\n", p.Reason)
}

// linkLatest points reports/latest at the new bundle (best effort).
func linkLatest(out string) {
	latest := filepath.Join(filepath.Dir(out), "latest")
	_ = os.Remove(latest)
	_ = os.Symlink(filepath.Base(out), latest)
}

func versions() map[string]string {
	// "rubric" names the rubric's content and "build" the source revision
	// the binary was built from (when Go stamped it): `acceptance class`
	// refuses to merge bundles that differ in either, or in "acceptance".
	v := map[string]string{"acceptance": version, "contract": "OpenSandbox 1.1.1", "rubric": rubric.Course.Hash()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v["go"] = bi.GoVersion
		if b := buildRevision(bi.Settings); b != "" {
			v["build"] = b
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/cucumber/godog" {
				v["godog"] = d.Version
			}
		}
	}
	return v
}

// buildRevision is the VCS revision Go stamped into the binary ("" when it
// did not, e.g. in a test binary), with "+modified" for a dirty tree.
func buildRevision(settings []debug.BuildSetting) string {
	rev, modified := "", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" && modified {
		rev += "+modified"
	}
	return rev
}

// baselines configures drift detection. A subject's own evidence directory
// (its outputs, logs and the audit of its calls) is left out: drift reports
// changes of the platform's contract, not of a subject's behaviour.
func baselines(dir, target string) report.Baselines {
	b := report.BaselinesFromEnv(dir)
	if target == "docker" {
		b.Sub = "docker" // harness/report/baselines/docker: the real OpenSandbox on Docker
	}
	b.Exclude = func(ref string) bool { return strings.HasPrefix(filepath.ToSlash(ref), "evidence/subject-") }
	return b
}

// checkTags validates a godog tag expression (terms joined by "," for or and
// "&&" for and, "~" negates) and that every tag it names exists in the
// features: godog panics on an empty term, and a mistyped tag would silently
// select nothing.
func checkTags(expr string) error {
	if strings.TrimSpace(expr) == "" {
		return nil
	}
	var terms []string
	for _, or := range strings.Split(expr, ",") {
		for _, term := range strings.Split(or, "&&") {
			t := strings.TrimPrefix(strings.TrimSpace(term), "~")
			if strings.TrimSpace(term) == "" {
				return fmt.Errorf("--tags %q is malformed: an empty term (a \",\" or \"&&\" with nothing on one side)", expr)
			}
			if !strings.HasPrefix(t, "@") || len(t) < 2 || strings.ContainsAny(t[1:], " \t~@") {
				return fmt.Errorf("--tags %q is malformed: %q is not a tag (want @name, ~@name, joined by \",\" or \"&&\")", expr, strings.TrimSpace(term))
			}
			terms = append(terms, t)
		}
	}
	known := featureTags()
	for _, t := range terms {
		if !known[t] {
			return fmt.Errorf("--tags %q: no feature or scenario is tagged %s", expr, t)
		}
	}
	return nil
}

// tagsPrecedenceNote explains godog's precedence when an expression negates
// a tag in some of its alternatives but not all: godog splits on "," before
// "&&" and has no grouping, so "A,B && ~@large" keeps A's @large scenarios.
// It is a note, not a refusal: the expression may mean just that.
func tagsPrecedenceNote(expr string) string {
	alts := strings.Split(expr, ",")
	if len(alts) < 2 {
		return ""
	}
	var order []string
	in := map[string]int{}
	for _, or := range alts {
		seen := map[string]bool{}
		for _, term := range strings.Split(or, "&&") {
			if t := strings.TrimSpace(term); strings.HasPrefix(t, "~") && !seen[t] {
				seen[t] = true
				if in[t] == 0 {
					order = append(order, t)
				}
				in[t]++
			}
		}
	}
	var partial []string
	for _, t := range order {
		if in[t] < len(alts) {
			partial = append(partial, t)
		}
	}
	if len(partial) == 0 {
		return ""
	}
	fixed := make([]string, len(alts))
	for i, or := range alts {
		terms := []string{strings.TrimSpace(or)}
		for _, t := range partial {
			if !strings.Contains(or, t) {
				terms = append(terms, t)
			}
		}
		fixed[i] = strings.Join(terms, " && ")
	}
	return fmt.Sprintf("--tags %q: godog reads \",\" before \"&&\", so %s applies only to the alternatives that name it; "+
		"to exclude it from every one write %q", expr, strings.Join(partial, ", "), strings.Join(fixed, ","))
}

// featureTags lists every tag used in the embedded features.
func featureTags() map[string]bool {
	tags := map[string]bool{}
	entries, _ := fs.ReadDir(features.FS, ".")
	for _, e := range entries {
		b, err := fs.ReadFile(features.FS, e.Name())
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "@") {
				continue
			}
			for _, t := range strings.Fields(line) {
				tags[t] = true
			}
		}
	}
	return tags
}
