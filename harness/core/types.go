// Package core is the one grading core behind `acceptance run` and
// `acceptance grade`: plan → target (started once, checked by a preflight) →
// one suite per submission (subject runs, scenarios) → one report bundle per
// submission. The command files only parse flags and print.
//
// The core never imports the step definitions (harness/ never imports
// steps/): the suite is handed in as a SuiteFactory, and the target is started
// by a TargetStarter (the bundled server lives in mock-server/).
package core

import (
	"context"
	"github.com/osb-capstone/acceptance/harness/observe"
	"io"
	"sync"
	"time"

	"github.com/cucumber/godog"

	"github.com/osb-capstone/acceptance/harness/confine"
	"github.com/osb-capstone/acceptance/harness/injection"
	"github.com/osb-capstone/acceptance/harness/rubric"
	"github.com/osb-capstone/acceptance/harness/stubs"
	"github.com/osb-capstone/acceptance/harness/submission"
)

// Target is the server being graded against.
type Target struct {
	Kind       rubric.Target // mock (bundled, with audit) or real (a URL)
	Domain     string        // host:port[/path] as in OPEN_SANDBOX_DOMAIN
	APIKey     string
	AdminToken string // the bundled server's /_mock token; empty for a real server
	// SidecarLog follows the log of a sandbox's egress sidecar into w until
	// the sidecar stops or ctx ends (the docker target; nil elsewhere: a
	// real server gives no access to its containers).
	SidecarLog func(ctx context.Context, sandboxID string, w io.Writer) error `json:"-"`
	// DataAPIURL is the data API's URL as the target's sandboxes reach it
	// (CAPSTONE_DATA_API_URL); empty: stubs.DataAPIURL. The docker target
	// serves it over plain http on its bridge (docs/docker.md).
	DataAPIURL string
	// StubNote says why the target's sandboxes cannot reach the stubs, when
	// that is so ("": nothing known against it).
	StubNote string
	// WatchCreates watches, from the host, the names created in directory
	// dir (one level below the root) of a sandbox's file system from now
	// until the sandbox is removed (the docker target on this machine's
	// engine; nil elsewhere).
	WatchCreates func(ctx context.Context, sandboxID, dir string) (injection.FileWatch, error) `json:"-"`
	// StubHosts are the stub host names a real target offers its sandboxes
	// on its own network (the docker target: its bridge's resolver and
	// front); nil: none. The bundled server's gateway reaches every stub.
	StubHosts []string
	// SandboxFate says what the target itself saw of a sandbox: DELETEs of
	// it its control plane answered, and whether its container is gone (the
	// docker target; nil elsewhere). A sandbox gone before its TTL with no
	// DELETE from anyone is the target's or the machine's fault.
	SandboxFate func(ctx context.Context, sandboxID string) (SandboxFate, error) `json:"-"`
}

// SandboxFate is what a target saw of one sandbox (Target.SandboxFate).
type SandboxFate struct {
	// Deletes are the control plane's log lines of DELETEs of it answered
	// with success, whoever sent them.
	Deletes []string
	// LogNames is how many lines of the control plane's log name it.
	LogNames int
	// ContainerGone: the engine holds no container of it.
	ContainerGone bool
	// Stopped: its container stopped (not running, or gone and died by the
	// engine's events) at StoppedAt (zero: unknown); EngineSaid is the
	// engine's reason (OOM kill, exit code or signal, State.Error, its
	// events, its own restart).
	Stopped    bool
	StoppedAt  time.Time
	EngineSaid string
}

// StartedTarget is a running target plus what the core needs from it.
type StartedTarget struct {
	Target
	// MintAPIKey returns a fresh API key the target accepts, so the audit
	// attributes each command invocation's calls to it. Nil on a real server.
	// tenant names the submission the key is for: on the bundled server the
	// key is put in that tenant (mock-server's key tenancy), so its calls see
	// only the sandboxes made with keys of the same submission and a careless
	// reap cannot delete another's. Each graded submission has its own.
	MintAPIKey func(tenant string) (string, error)
	Close      func()
}

// TargetStarter starts (or describes) the target of a session.
type TargetStarter func(ctx context.Context, upstreams map[string]string) (StartedTarget, error)

// Stubs are the loopback servers standing in for the internet, as one
// submission sees them.
type Stubs struct {
	DataAPIURL   string // CAPSTONE_DATA_API_URL
	DataAPIToken string // CAPSTONE_DATA_API_TOKEN (the real credential; a canary); one per submission
	// DataAPIReceived reports how the data API stub saw this submission's
	// token since the given time: "real", "fake", "none" or "" when it was
	// not called.
	DataAPIReceived func(since time.Time) string
	// ExfilRequests counts requests the exfiltration sink received since the given time.
	ExfilRequests func(since time.Time) int
	// StubRequests returns what each stub logged since the given time, by
	// stub ("data_api", "exfil", "index", "csv"). It is kept as a run's
	// evidence only: a request is attributed by identity (the gateway's
	// egress_request events, a token), never by when it came.
	StubRequests func(since time.Time) map[string][]stubs.Request
	// Watch tells every stub which values (label → value: a run's planted
	// input marker) to look for in the requests it receives.
	Watch func(map[string]string)
	// CSVURL serves a fixture file on a loopback URL ({csv_url}).
	CSVURL func(path string) (string, error)
	// PackageIndexAvailable says whether the stub index has the wheel the
	// reference install step needs, and why not.
	PackageIndexAvailable func() (bool, string)
	// Shared is true when other submissions are graded against the same
	// stubs at the same time (a class): the exfiltration sink then cannot
	// tell whose request it got.
	Shared bool
}

// SuiteInput is what a suite for one submission is built from.
type SuiteInput struct {
	Target     Target
	Submission *submission.Submission
	SelfExe    string // the acceptance binary ({acceptance}, the reference subject)
	Results    *rubric.Results
	BundleDir  string // the report bundle; evidence goes under evidence/
	RunID      string
	// SubjectTimeout bounds one command invocation of the submission.
	SubjectTimeout time.Duration
	Stubs          Stubs
	// MintAPIKey returns a fresh API key accepted by the target, so the audit
	// can tell one command invocation's calls from every other's (bundled
	// server only). Nil: every invocation uses Target.APIKey. Every key it
	// mints belongs to this submission's tenant (Tenant).
	MintAPIKey func() (string, error)
	// Tenant is the submission's tenant on the bundled server ("" when keys
	// are not minted): the keys minted for it see only its own sandboxes.
	Tenant string
	// View is the submission's view of a real target, which has no tenants
	// (nil on the bundled server): every recording proxy started for it
	// shares it, so its commands list only the sandboxes its own commands
	// created, and another's answers as unknown (harness/observe).
	View *observe.View
	// Progress receives one line per finished scenario; nil discards.
	Progress io.Writer
	// Secrets registers values the report must redact.
	Secrets func(values ...string)
	// FaultLock is shared by every submission graded on one server: what
	// must run alone on it (a server-wide simulated fault; the contract
	// check, whose keyless calls are attributed by time) holds it for
	// writing, every other run of a submission's command for reading. The
	// suite's drills key their faults to the run, so they read.
	FaultLock *sync.RWMutex
	// Repetition is which of --repeat N runs this suite is (1-based; 0 = 1).
	Repetition int
	// Inputs are the session's shared generated inputs and recomputations
	// (nil: each suite makes its own).
	Inputs *Inputs
	// Confine confines every command of the submission (nil: unconfined,
	// Unconfined says why).
	Confine    *confine.Config
	Unconfined string
	// SubmissionTimeout bounds the summed time of the submission's commands
	// (0: unbounded beyond SubjectTimeout per command).
	SubmissionTimeout time.Duration
}

// Suite is one submission's scenario set.
type Suite interface {
	InitializeScenario(*godog.ScenarioContext)
	Close() error
}

// SuiteFactory builds the suite for one submission.
type SuiteFactory func(SuiteInput) (Suite, error)
