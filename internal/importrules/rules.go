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
		Name: "harness-reaches-server-only-through-wire",
		From: []string{"harness/..."},
		Except: []string{
			// The stand-in images for the docker target run the bundled
			// server's execd and egress code inside containers: server code
			// by design, never imported by the grading path.
			"harness/dockertarget", "harness/dockertarget/standin",
			// The fidelity ledger prints the server's documented deviations list.
			"harness/fidelity",
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
		Name: "server-imports-no-grader",
		From: []string{"mock-server/..."},
		Deny: []string{"harness/...", "steps/...", "cmd/...", "features/...", "fixtures/..."},
		Why:  "the bundled server is a target; it knows nothing of the grading",
	},
	{
		Name:  "reference-imports-no-grader",
		From:  []string{"cmd/acceptance/reference"},
		Deny:  []string{"..."},
		Allow: []string{"harness/osb", "harness/summary", "harness/regularfile", "mock-server/wire"},
		Why:   "the reference pipeline is a client like any submission: the raw OpenSandbox client and the summary format only",
	},
}

// ProjectCalls are the call rules: the report's renderers only render a
// document whose scores were computed before (rubric.Evaluate at the end of a
// run, the final score when a bundle is loaded or reviewed).
var ProjectCalls = []CallRule{
	{
		Name:    "renderers-do-no-scoring",
		Pkg:     "harness/report",
		Files:   []string{"render_*.go"},
		FuncsOf: []string{"harness/rubric/evaluate.go", "harness/rubric/score.go", "harness/report/final.go"},
		Why:     "one place computes scores; renderers turn them into words",
	},
}
