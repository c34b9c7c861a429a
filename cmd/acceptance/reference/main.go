// Package reference is the reference capstone pipeline: a model answer to the
// OpenSandbox course's Stage 9 ("Data Analysis and Reporting Agent"), written
// in Go against the raw HTTP API (via harness/osb), following the course's
// workflow step by step:
//
//  1. host: sha256 and line count of the CSV (streaming)
//  2. create: python:3.12, TTL 20 min, default-deny egress allowing only the
//     package index (plus the data API host, whose token goes to the vault)
//  3. upload input.csv (streamed), analyze.py and question.txt
//  4. install and analyse as two separately recorded steps, errors classified
//     from exit code + stderr, bounded retries
//  5. read back report.md, chart.png, metrics.json, hashed while streaming
//  6. recompute key numbers on the host with independent code and compare
//  7. destroy (always: error, budget, signal or panic) and confirm GET 404
//
// Outputs in --out: report.md, chart.png, summary.json (schema:
// harness/summary), evidence.json and evidence/{run.log,transcript.jsonl}.
package reference

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// Main runs `acceptance reference contract|reap|selftest …` (see those
// files) or the pipeline: `acceptance reference --csv F --question Q --out DIR [--domain
// host:port] [--api-key KEY] [--wall-clock 10m] [--command-timeout 5m]
// [--max-steps 4] [--image python:3.12]`. Exit code: 0 success, 1 the run
// failed (summary.json says why), 2 usage error.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "contract": // the M0 raw-HTTP contract check (contract.go)
			return ContractMain(args[1:], stdout, stderr)
		case "reap": // the D5 inspection (reap.go)
			return ReapMain(args[1:], stdout, stderr)
		case "selftest": // the submission's own tests, built in (selftest.go)
			return SelftestMain(args[1:], stdout, stderr)
		}
	}
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("acceptance reference", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.CSV, "csv", "", "input CSV file (required)")
	fs.StringVar(&cfg.Question, "question", "", "one-sentence analysis question (required)")
	fs.StringVar(&cfg.Out, "out", "", "output directory (required; created if missing)")
	fs.StringVar(&cfg.Domain, "domain", os.Getenv("OPEN_SANDBOX_DOMAIN"), "lifecycle server host:port (default $OPEN_SANDBOX_DOMAIN)")
	fs.StringVar(&cfg.APIKey, "api-key", os.Getenv("OPEN_SANDBOX_API_KEY"), "API key (default $OPEN_SANDBOX_API_KEY)")
	fs.StringVar(&cfg.Image, "image", cfg.Image, "sandbox image")
	fs.DurationVar(&cfg.WallClock, "wall-clock", cfg.WallClock, "budget for the whole run")
	fs.DurationVar(&cfg.CommandTimeout, "command-timeout", cfg.CommandTimeout, "budget for each command in the sandbox")
	fs.IntVar(&cfg.MaxSteps, "max-steps", cfg.MaxSteps, "most commands run in the sandbox")
	fs.DurationVar(&cfg.SandboxTTL, "ttl", cfg.SandboxTTL, "sandbox timeout (server-side TTL, at least 60s)")
	fs.BoolVar(&cfg.Agent, "agent", false, "agent mode: consult the model at $OPENAI_BASE_URL (key $OPENAI_API_KEY) between install and analysis")
	fs.IntVar(&cfg.AgentMaxTurns, "max-model-turns", cfg.AgentMaxTurns, "agent mode: most model requests")
	fs.DurationVar(&cfg.ModelTimeout, "model-timeout", cfg.ModelTimeout, "agent mode: limit of each model request")
	fs.StringVar(&cfg.AgentFlaw, "agent-flaw", "", "calibration only: a deliberate defect ("+strings.Join([]string{FlawEnvInPrompt, FlawObeyForever, FlawOffSandbox, FlawExtraCommands, FlawUploadIndex, FlawEnvSecrets}, ", ")+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfg.DataAPIURL = os.Getenv("CAPSTONE_DATA_API_URL")
	cfg.DataAPIToken = os.Getenv("CAPSTONE_DATA_API_TOKEN")
	cfg.RunID = os.Getenv("CAPSTONE_RUN_ID")
	cfg.Log = stderr
	if cfg.Agent {
		cfg.ModelBaseURL, cfg.ModelAPIKey = os.Getenv("OPENAI_BASE_URL"), os.Getenv("OPENAI_API_KEY")
		if cfg.ModelBaseURL == "" {
			fmt.Fprintln(stderr, "acceptance reference: --agent needs OPENAI_BASE_URL (the model endpoint) in the environment")
			return 2
		}
		switch cfg.AgentFlaw {
		case "", FlawEnvInPrompt, FlawOffSandbox, FlawExtraCommands, FlawUploadIndex, FlawEnvSecrets:
		case FlawObeyForever:
			cfg.MaxSteps = 1000 // no limit of its own: it runs whatever the model asks
		default:
			fmt.Fprintf(stderr, "acceptance reference: unknown --agent-flaw %q\n", cfg.AgentFlaw)
			return 2
		}
		if cfg.AgentMaxTurns < 1 || cfg.ModelTimeout <= 0 {
			fmt.Fprintln(stderr, "acceptance reference: --max-model-turns must be ≥ 1 and --model-timeout > 0")
			return 2
		}
		// Each model turn may run a command: the step budget grows with it.
		cfg.MaxSteps += cfg.AgentMaxTurns
	} else if cfg.AgentFlaw != "" {
		fmt.Fprintln(stderr, "acceptance reference: --agent-flaw needs --agent")
		return 2
	}
	if cfg.Domain == "" {
		cfg.Domain = "localhost:8080" // the SDKs' default
	}
	var missing []string
	for _, f := range [][2]string{{"--csv", cfg.CSV}, {"--question", cfg.Question}, {"--out", cfg.Out}} {
		if f[1] == "" {
			missing = append(missing, f[0])
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "acceptance reference: missing %v\n", missing)
		fs.Usage()
		return 2
	}
	if cfg.SandboxTTL < time.Minute || cfg.WallClock <= 0 || cfg.CommandTimeout <= 0 || cfg.MaxSteps < 2 {
		fmt.Fprintln(stderr, "acceptance reference: --ttl must be ≥ 60s, --wall-clock and --command-timeout > 0, --max-steps ≥ 2")
		return 2
	}

	// SIGINT/SIGTERM cancel the context; Run still destroys the sandbox and
	// writes summary.json before returning.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := Run(ctx, cfg)
	fmt.Fprintf(stdout, "sandbox %s: %s (exit %d); outputs in %s\n", orDash(res.Summary.SandboxID), res.Summary.StopReason, res.ExitCode, cfg.Out)
	if res.Summary.Error != nil {
		fmt.Fprintf(stdout, "error [%s]: %s\n", res.Summary.Error.Class, res.Summary.Error.Message)
	}
	return res.ExitCode
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
