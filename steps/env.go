// Package steps holds the godog step definitions of the acceptance suite. An
// Env describes one grading run (target server, subject, report bundle); its
// InitializeScenario wires the steps into a godog suite. Scenario state lives
// in each scenario's context, so scenarios can run concurrently.
//
// The steps are the suite's text and its property checks, over a framework
// they only use (as Kubernetes' e2e tests use test/e2e/framework): a
// command is launched and judged by harness/command, and a check's work
// lives in a harness package named for it (harness/blame, boxpolicy,
// closedloop, indexdeny, netprobe, owntests, readme, residual, secretscan,
// subfile, toolcalls, vanish, vaultcheck), which returns harness/command's
// typed errors; a step phrases what it found for an entry (verdict).
// harness/ never imports steps/ (internal/importrules).
//
// Steps reach the bundled server only over HTTP (lifecycle, execd, and the
// documented /_mock admin extension) and through the few hooks in Options.
package steps

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/boxpolicy"
	"github.com/osb-capstone/acceptance/harness/core"
	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// Target is the server being graded against.
type Target = core.Target

// SandboxFate is what a real target saw of one sandbox (vanish.go).
type SandboxFate = core.SandboxFate

// Stubs are the loopback servers standing in for the internet.
type Stubs = core.Stubs

// Options configure an Env: one submission's suite.
type Options = core.SuiteInput

// Env is one grading run's shared environment.
type Env struct {
	opt        Options
	client     *osb.Client // the harness's own client, transcripts to evidence/transcripts.jsonl
	transcript *os.File
	// runSalt keys the opaque part of each run's CAPSTONE_RUN_ID (runIDFor).
	runSalt string

	runsMu sync.Mutex
	runs   map[string]*subjectRunOnce

	// faultMu serialises scenarios that switch on a server-wide simulated fault
	// (they take it for writing) against subject runs (for reading).
	// It is the session's lock when several submissions share one server.
	faultMu *sync.RWMutex

	progressMu sync.Mutex

	canaryMu sync.Mutex
	canaries map[string]string // label → value, planted in the bundled server

	budgetMu      sync.Mutex
	budgetUsed    time.Duration // summed time of the submission's commands (SubmissionTimeout)
	scanned       sync.Map      // *subjectRun → true once its files were scanned for secrets (scan.go)
	egressChecked sync.Map      // *subjectRun → true once what it sent out was judged (attribution.go)
	egressOnce    sync.Once     // egressEnforcement asked the bundled server (egress_enforcement.go)
	egressEnf     string
	egressErr     error
	markersOnce   sync.Once        // the input markers are planted in the bundled server (attribution.go)
	owners        boxpolicy.Owners // the submission's keys and who created which sandbox (confine.go)
}

// NewEnv checks the options and builds the harness client.
func NewEnv(opt Options) (*Env, error) {
	if opt.Results == nil {
		return nil, fmt.Errorf("steps: Options.Results is required")
	}
	if opt.Submission == nil {
		return nil, fmt.Errorf("steps: Options.Submission is required")
	}
	if opt.BundleDir == "" {
		return nil, fmt.Errorf("steps: Options.BundleDir is required")
	}
	abs, err := filepath.Abs(opt.BundleDir)
	if err != nil {
		return nil, err
	}
	opt.BundleDir = abs // subjects run in their own working directory
	if opt.RunID == "" {
		opt.RunID = randomHex(6)
	}
	if opt.SubjectTimeout <= 0 {
		opt.SubjectTimeout = 10 * time.Minute
	}
	if err := os.MkdirAll(filepath.Join(opt.BundleDir, "evidence"), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(opt.BundleDir, "evidence", "transcripts.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cl, err := osb.New(opt.Target.Domain, opt.Target.APIKey,
		osb.WithAdminToken(opt.Target.AdminToken),
		osb.WithTranscript(&osb.JSONLTranscript{W: f}),
		osb.WithSecrets(opt.Stubs.DataAPIToken))
	if err != nil {
		f.Close()
		return nil, err
	}
	fm := opt.FaultLock
	if fm == nil {
		fm = &sync.RWMutex{}
	}
	return &Env{opt: opt, client: cl, transcript: f, runs: map[string]*subjectRunOnce{}, faultMu: fm, runSalt: randomHex(16)}, nil
}

// runIDFor is the CAPSTONE_RUN_ID of the subject run keyed key: the grade's
// run id and an opaque suffix, distinct per key and the same for a key
// within one grade. It never names the fixture or the drill (the key does:
// "sales-capacity-429"), and without the grade's salt the suffix cannot be
// matched against a guessed key: a submission cannot tell a drill from it.
func (e *Env) runIDFor(key string) string {
	m := hmac.New(sha256.New, []byte(e.runSalt))
	m.Write([]byte(key))
	return e.opt.RunID + "-" + hex.EncodeToString(m.Sum(nil))[:12]
}

// repKey suffixes an evidence name with the repetition (--repeat), so each
// repetition's subject runs have their own directories.
func (e *Env) repKey(key string) string {
	if e.opt.Repetition > 1 {
		return fmt.Sprintf("%s-r%d", key, e.opt.Repetition)
	}
	return key
}

// sub is the submission being graded.
func (e *Env) sub() *submission.Submission { return e.opt.Submission }

// Close releases the Env's files.
func (e *Env) Close() error { return e.transcript.Close() }

// Client is the harness's own client for the target.
func (e *Env) Client() *osb.Client { return e.client }

// mock reports whether the target is the bundled server (with its audit trail).
func (e *Env) mock() bool {
	return e.opt.Target.Kind == rubric.TargetMock && e.opt.Target.AdminToken != ""
}

// writeEvidence stores content under evidence/<id>/<name> and returns the path
// relative to the bundle.
func (e *Env) writeEvidence(id, name string, content []byte) string {
	rel := filepath.Join("evidence", sanitize(id), sanitize(name))
	abs := filepath.Join(e.opt.BundleDir, rel)
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return ""
	}
	if err := os.WriteFile(abs, content, 0o644); err != nil {
		return ""
	}
	return rel
}

func (e *Env) progress(format string, args ...any) {
	if e.opt.Progress == nil {
		return
	}
	e.progressMu.Lock()
	defer e.progressMu.Unlock()
	fmt.Fprintf(e.opt.Progress, format+"\n", consoleArgs(args)...) // every text argument inert (printable.go)
}

func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, s)
	s = strings.Trim(s, ".")
	if len(s) > 100 { // keep the extension: the report links by name, viewers open by extension
		ext := filepath.Ext(s)
		if len(ext) > 10 {
			ext = ""
		}
		s = s[:100-len(ext)] + ext
	}
	if s == "" {
		s = "_"
	}
	return s
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ctxTimeout bounds one harness call.
func ctxTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
