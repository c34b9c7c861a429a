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

	"github.com/cucumber/godog"

	"github.com/osb-capstone/acceptance/features"
	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
	"github.com/osb-capstone/acceptance/harness/subject"
	"github.com/osb-capstone/acceptance/steps"
)

// runConfig is `acceptance run`'s flags.
type runConfig struct {
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
	wheels         string
	stateDir       string
	model          bool
}

func parseRunFlags(args []string, stderr io.Writer) (*runConfig, error) {
	c := &runConfig{}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.target, "target", "mock", `"mock" (the bundled server, started in-process) or the URL of a real OpenSandbox server`)
	fs.StringVar(&c.apiKey, "api-key", os.Getenv("OPEN_SANDBOX_API_KEY"), "API key of a real server (default $OPEN_SANDBOX_API_KEY); the bundled server makes its own")
	fs.StringVar(&c.subject, "subject", "reference", `"reference" or a command template with {csv} {csv_url} {question} {out}`)
	fs.StringVar(&c.tags, "tags", "", `godog tag expression, e.g. "@milestone:M0,@milestone:M1" or "~@large"`)
	fs.StringVar(&c.out, "out", "", "report bundle directory (default reports/<run-id>, with reports/latest pointing at it)")
	fs.Int64Var(&c.seed, "seed", 0, "scenario order seed (0 = derived from the clock; printed in the report)")
	fs.IntVar(&c.concurrency, "concurrency", 1, "scenarios run at once")
	fs.DurationVar(&c.subjectTimeout, "subject-timeout", 10*time.Minute, "wall-clock limit of one subject run (its process group is killed after it)")
	fs.BoolVar(&c.insecure, "insecure-no-isolation", false, "let the bundled server run without namespaces (isolation criteria are then not measured)")
	fs.StringVar(&c.baselines, "baselines", report.DefaultBaselineDir, "evidence baseline directory for drift detection")
	fs.StringVar(&c.wheels, "wheels", ".cache/wheels", "wheels served by the stub package index (make deps fills it)")
	fs.StringVar(&c.stateDir, "state-dir", "", "bundled server state directory (default a temporary directory)")
	fs.BoolVar(&c.model, "model", false, "the subject is an agent with a model in the loop (manifest model: true): it gets the scripted model as OPENAI_BASE_URL/OPENAI_API_KEY")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := checkTags(c.tags); err != nil {
		return nil, err
	}
	if c.concurrency < 1 {
		return nil, fmt.Errorf("--concurrency must be at least 1")
	}
	if c.target != "mock" {
		u, err := url.Parse(c.target)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf(`--target must be "mock" or an http(s) URL, got %q`, c.target)
		}
		if c.apiKey == "" {
			return nil, fmt.Errorf("--target %s needs --api-key (or OPEN_SANDBOX_API_KEY)", c.target)
		}
	}
	if c.seed == 0 {
		c.seed = time.Now().UnixNano() % 1_000_000
	}
	return c, nil
}

func runMain(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseRunFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "acceptance run: %v\n", err)
		return 2
	}
	if problems, _, err := rubric.CheckFS(rubric.Course, features.FS); err != nil || len(problems) > 0 {
		fmt.Fprintf(stderr, "acceptance run: the features and the rubric disagree: %v %s\n", err, strings.Join(problems, "; "))
		return 2
	}
	tmpl, err := subject.Parse(cfg.subject)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance run: --subject: %v\n", err)
		return 2
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "acceptance run: %v\n", err)
		return 2
	}

	if err := checkURLTarget(context.Background(), cfg); err != nil {
		fmt.Fprintf(stderr, "acceptance run: %v\n", err)
		return 2
	}

	runID := time.Now().UTC().Format("20060102T150405Z") + "-" + randomHex(3)
	out := cfg.out
	if out == "" {
		out = filepath.Join("reports", runID)
	}
	// Absolute: subjects run in their own working directory, and {csv}/{out} must still name the bundle's files.
	if out, err = filepath.Abs(out); err != nil {
		fmt.Fprintf(stderr, "acceptance run: --out: %v\n", err)
		return 2
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		fmt.Fprintf(stderr, "acceptance run: %v\n", err)
		return 2
	}
	if cfg.out == "" {
		linkLatest(out)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	kind := rubric.TargetMock
	targetName := "mock (bundled server)"
	if cfg.target != "mock" {
		kind, targetName = rubric.TargetReal, cfg.target
	}
	bundle, err := report.Open(out, rubric.Course, report.Meta{
		RunID: runID, Target: cfg.target, TargetKind: kind, Subject: cfg.subject, Seed: cfg.seed, Tags: cfg.tags,
		Versions: versions(), StartedAt: time.Now().UTC(), Command: "acceptance",
	}, report.Options{Baselines: baselines(cfg.baselines)})
	if err != nil {
		fmt.Fprintf(stderr, "acceptance run: %v\n", err)
		return 2
	}
	defer bundle.Close()
	defer bundle.Recover()

	dataToken := "capstone-data-" + randomHex(16)
	bundle.AddSecrets(dataToken)
	st, err := stubs.Start(stubs.Config{WheelsDir: cfg.wheels, DataAPIToken: dataToken})
	if err != nil {
		fmt.Fprintf(stderr, "acceptance run: starting the loopback stubs: %v\n", err)
		return 2
	}
	defer st.Close()

	target, closeTarget, err := startTarget(ctx, cfg, st, stderr)
	if err != nil {
		bundle.Abort(err.Error())
		_, _ = bundle.Finalize()
		fmt.Fprintf(stderr, "acceptance run: %v\n", err)
		return 2
	}
	defer closeTarget()
	bundle.AddSecrets(target.APIKey, target.AdminToken)

	fmt.Fprintf(stdout, "acceptance run %s: target %s, subject %s, seed %d, report %s\n", runID, targetName, cfg.subject, cfg.seed, out)
	env, err := steps.NewEnv(steps.Options{
		Target:         target.Target,
		Subject:        tmpl,
		SelfExe:        self,
		Results:        bundle.Results(),
		BundleDir:      out,
		RunID:          runID,
		SubjectTimeout: cfg.subjectTimeout,
		Stubs:          stubHooks(st, dataToken),
		MintAPIKey:     target.MintAPIKey,
		Model:          cfg.model,
		Progress:       stdout,
	})
	if err != nil {
		fmt.Fprintf(stderr, "acceptance run: %v\n", err)
		return 2
	}
	defer env.Close()

	godogLog, err := os.Create(filepath.Join(out, "godog.log"))
	if err != nil {
		fmt.Fprintf(stderr, "acceptance run: %v\n", err)
		return 2
	}
	defer godogLog.Close()
	suite := godog.TestSuite{
		Name:                "capstone-acceptance",
		ScenarioInitializer: env.InitializeScenario,
		Options: &godog.Options{
			Format:         "pretty,cucumber:" + filepath.Join(out, "cucumber.json"),
			Output:         godogLog,
			NoColors:       true,
			FS:             features.FS,
			Paths:          []string{"."},
			Tags:           cfg.tags,
			Concurrency:    cfg.concurrency,
			Randomize:      cfg.seed,
			Strict:         true,
			DefaultContext: ctx,
		},
	}
	status := suite.Run()
	if ctx.Err() != nil {
		bundle.Abort("interrupted by a signal")
	} else if status == 2 {
		bundle.Abort("godog could not run the features (see godog.log)")
	}
	doc, err := bundle.Finalize()
	if err != nil {
		fmt.Fprintf(stderr, "acceptance run: writing the report: %v\n", err)
		return 2
	}
	fmt.Fprintln(stdout, report.SummaryLine(doc))
	return doc.ExitCode
}

// stubHooks adapts the loopback stubs to what the steps need.
func stubHooks(st *stubs.Set, token string) steps.Stubs {
	since := func(reqs []stubs.Request, t time.Time) []stubs.Request {
		var out []stubs.Request
		for _, r := range reqs {
			if !r.Time.Before(t) {
				out = append(out, r)
			}
		}
		return out
	}
	return steps.Stubs{
		DataAPIURL:   stubs.DataAPIURL,
		DataAPIToken: token,
		DataAPIReceived: func(t time.Time) string {
			got := ""
			for _, r := range since(st.DataAPI.Requests(), t) {
				if r.Credential == stubs.CredentialReal {
					return "real"
				}
				got = r.Credential
			}
			return got
		},
		ExfilRequests:         func(t time.Time) int { return len(since(st.Exfil.Requests(), t)) },
		CSVURL:                st.CSV.Add,
		PackageIndexAvailable: func() (bool, string) { return st.Index.Available() },
	}
}

// linkLatest points reports/latest at the new bundle (best effort).
func linkLatest(out string) {
	latest := filepath.Join(filepath.Dir(out), "latest")
	_ = os.Remove(latest)
	_ = os.Symlink(filepath.Base(out), latest)
}

func versions() map[string]string {
	v := map[string]string{"acceptance": version, "contract": "OpenSandbox 1.1.1"}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v["go"] = bi.GoVersion
		for _, d := range bi.Deps {
			if d.Path == "github.com/cucumber/godog" {
				v["godog"] = d.Version
			}
		}
	}
	return v
}

// baselines configures drift detection. A subject's own evidence directory
// (its outputs, logs and the audit of its calls) is left out: drift reports
// changes of the platform's contract, not of a subject's behaviour.
func baselines(dir string) report.Baselines {
	b := report.BaselinesFromEnv(dir)
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
	known := featureTags()
	for _, or := range strings.Split(expr, ",") {
		for _, term := range strings.Split(or, "&&") {
			t := strings.TrimPrefix(strings.TrimSpace(term), "~")
			if !strings.HasPrefix(t, "@") || len(t) < 2 || strings.ContainsAny(t[1:], " \t~@") {
				return fmt.Errorf("--tags %q: %q is not a tag (want @name, ~@name, joined by \",\" or \"&&\")", expr, strings.TrimSpace(term))
			}
			if !known[t] {
				return fmt.Errorf("--tags %q: no feature or scenario is tagged %s", expr, t)
			}
		}
	}
	return nil
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
