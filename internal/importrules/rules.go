package importrules

// Project is the project's layering, enforced by TestProjectImportRules.
// docs/maintaining.md explains it; change both together.
var Project = []Rule{
	{
		Name: "rubric-imports-nothing",
		From: []string{"harness/rubric"},
		Deny: []string{"..."},
		Why:  "the rubric (entries, verdicts, scoring) is the grading contract; it depends on nothing else of the project",
	},
	{
		Name: "wire-imports-nothing",
		From: []string{"mock-server/wire"},
		Deny: []string{"..."},
		Why:  "the wire formats are neutral ground shared by the harness and the server",
	},
	{
		Name: "cgroup-imports-nothing",
		From: []string{"internal/cgroup"},
		Deny: []string{"..."},
		Why: "the cgroup mechanics are neutral ground shared by the grader's boxes (harness/confine) and the bundled " +
			"server's sandboxes (mock-server/runtime), so the server may import them: they import nothing of the project",
	},
	{
		Name: "fullduplex-imports-nothing",
		From: []string{"internal/fullduplex"},
		Deny: []string{"..."},
		Why: "forwarding in full duplex safely is neutral ground shared by the grader's forwarders (guard, recording " +
			"proxy) and the bundled server's (proxy route, execd endpoint, egress), so the server may import it",
	},
	{
		Name: "answerfirst-imports-nothing",
		From: []string{"internal/answerfirst"},
		Deny: []string{"..."},
		Why: "the test upstream that answers before it reads the body is shared by the tests of the grader's forwarders " +
			"and of the bundled server's, so it imports nothing of the project",
	},
	{
		Name: "harness-reaches-server-only-through-wire",
		From: []string{"harness/..."},
		Except: []string{
			// The stand-in images for the docker target run the bundled
			// server's execd and egress code inside containers: server code
			// by design, never imported by the grading path.
			"harness/dockertarget", "harness/dockertarget/standin",
			// The fidelity ledger prints the server's documented deviations list.
			"harness/fidelity",
			// The upgrade check names the docker target's classified start
			// failures (harness/dockertarget); it grades nothing itself, each
			// run is a separate `acceptance run`.
			"harness/upgradecheck",
		},
		Deny:  []string{"mock-server/..."},
		Allow: []string{"mock-server/wire"},
		Why:   "the harness talks to any OpenSandbox over HTTP; the bundled server is one target among others",
	},
	{
		Name: "harness-never-imports-steps",
		From: []string{"harness/..."},
		Deny: []string{"steps/...", "cmd/..."},
		Why:  "the harness is the library the godog steps and the command use, never the other way round",
	},
	{
		Name:  "server-imports-no-grader",
		From:  []string{"mock-server/..."},
		Deny:  []string{"harness/...", "steps/...", "cmd/...", "features/...", "fixtures/...", "internal/..."},
		Allow: []string{"internal/cgroup", "internal/fullduplex"},
		Why: "the bundled server is a target; it knows nothing of the grading. Of internal/ it imports only the " +
			"packages named neutral here, each kept importing nothing of the project by a rule of its own",
	},
	{
		Name: "report-core-imports-no-renderer",
		From: []string{"harness/report"},
		Deny: []string{"harness/report/render", "harness/report/classreport", "harness/report/compare"},
		Why: "the report core (document, journal, bundle) is what the renderers, the class summary and the comparison read; " +
			"the renderers register with it (report.Register), it never names them",
	},
	{
		Name: "renderers-import-no-class-summary",
		From: []string{"harness/report/render"},
		Deny: []string{"harness/report/classreport", "harness/report/compare"},
		Why:  "the class summary and the comparison use the renderers' words, never the other way round",
	},
	{
		Name:   "steps-name-no-runner-and-no-server",
		From:   []string{"steps"},
		Direct: true,
		Deny:   []string{"harness/subject", "harness/confine", "harness/observe", "mock-server/..."},
		Allow:  []string{"mock-server/wire"},
		ExceptFiles: []string{
			// The session's side of a launch, handed to the runner through
			// command.Launch's Setup hook, which receives the runner's spec:
			// the adapter itself, each command's box policy (the ports it may
			// reach, the guard of the admin API), and the scripted model's
			// endpoint in the command's environment.
			"steps/launch.go", "steps/confine.go", "steps/agent_run.go",
		},
		Why: "steps/ is step text and property checks: a command is launched, observed and judged by harness/command " +
			"(its Record names what the checks read), the box is harness/confine's, and the bundled server is reached over " +
			"HTTP only (its wire formats excepted); the excepted files hand the runner the session's side of a launch",
	},
	{
		Name:         "command-imports-no-godog",
		From:         []string{"harness/command"},
		DenyExternal: []string{"github.com/cucumber/godog"},
		Why: "the one judge of a command's outcome is tested and used without a scenario; " +
			"the steps phrase what a Record means for an entry",
	},
	{
		Name: "step-work-imports-no-godog",
		From: []string{"harness/blame", "harness/boxpolicy", "harness/closedloop", "harness/indexdeny", "harness/netprobe",
			"harness/owntests", "harness/readme", "harness/residual", "harness/secretscan", "harness/subfile",
			"harness/toolcalls", "harness/vanish", "harness/vaultcheck"},
		DenyExternal: []string{"github.com/cucumber/godog"},
		Why: "the work the steps use (a drill's machinery, a property's judgement, the decision table of an outcome) is " +
			"tested and used without a scenario, as test/e2e/framework is in Kubernetes: the steps phrase what it found " +
			"for an entry, the framework never knows a step",
	},
	{
		Name:  "reference-imports-no-grader",
		From:  []string{"cmd/acceptance/reference"},
		Deny:  []string{"..."},
		Allow: []string{"harness/osb", "harness/summary", "harness/regularfile", "mock-server/wire"},
		Why:   "the reference pipeline is a client like any submission: the raw OpenSandbox client and the summary format only",
	},
}

// ProjectCalls are the call rules: the report's renderers and the class
// summary only print scores the core computed before (rubric.Evaluate in
// report.Build at the end of a run; the final score in report.Scored before
// any renderer runs). The class summary loads a reviewed bundle's final score
// with the core's loader, report.ReviewedFinal (output.go), the way
// `acceptance render` loads one through its review hook: loading is the
// core's, printing is theirs.
var ProjectCalls = []CallRule{
	{
		Name:    "renderers-do-no-scoring",
		Pkg:     "harness/report/render",
		Files:   []string{"*.go"},
		Funcs:   scoringFuncs,
		FuncsOf: scoringFiles,
		Why:     "one place computes scores; renderers turn them into words",
	},
	{
		Name:    "class-summary-does-no-scoring",
		Pkg:     "harness/report/classreport",
		Files:   []string{"*.go"},
		Funcs:   scoringFuncs,
		FuncsOf: scoringFiles,
		Why:     "the class summary shows each bundle's own scores (report.json, review.json); it computes none",
	},
}

// scoringFiles hold every scoring function (each one's package-level
// functions are denied); scoringFuncs are the report core's functions
// elsewhere that score.
var (
	scoringFiles = []string{"harness/rubric/evaluate.go", "harness/rubric/score.go", "harness/report/final.go"}
	scoringFuncs = []string{"report.Build", "report.Scored"}
)

// ProjectValues are the value rules: M5's split between its demonstration and
// the defense questions, and the tolerance within which two point figures are
// equal, live in the score computation (harness/rubric/score.go) and nowhere
// else; the review, the renderers, the comparison and the upgrade check call
// its functions (rubric.M5Split, rubric.PointsExceed, rubric.PointsBelow,
// FinalEntry.EarnedInFull).
var ProjectValues = []ValueRule{
	{
		Name: "points-compare-only-in-score",
		From: []string{"..."},
		// The bundled server scores nothing; this package names the value it guards.
		Except:   []string{"mock-server/...", "internal/importrules"},
		Only:     []string{"harness/rubric/score.go"},
		Pkg:      "harness/rubric",
		Names:    []string{"defenseFraction", "pointsTolerance"},
		Literals: []float64{0.005},
		Why: "one place decides how points compare and how M5 is split: a second copy of the tolerance or the split " +
			"(the review's limits, Gradescope's pass, the diff's regression) drifts from the score it judges",
	},
}
