package report_test

import (
	"fmt"
	"os"

	"github.com/osb-capstone/acceptance/harness/report"
	_ "github.com/osb-capstone/acceptance/harness/report/render" // the output formats register themselves
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// How `acceptance run` and the steps use the bundle.
func Example() {
	dir, _ := os.MkdirTemp("", "bundle")
	defer os.RemoveAll(dir)

	b, err := report.Open(dir, rubric.Course, report.Meta{
		RunID: "run-1", Target: "mock", TargetKind: rubric.TargetMock, Subject: "reference", Seed: 1,
	}, report.Options{Baselines: report.BaselinesFromEnv("")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	b.AddSecrets("the-api-key") // never written to evidence

	func() {
		defer b.Recover() // a panic still leaves report.md/json/junit.xml
		// In a step: write evidence, then record an outcome citing it.
		ref, _ := b.Evidence(rubric.M0).WriteText("transcript.txt", "> POST /v1/sandboxes\n< HTTP/1.1 202 Accepted\n")
		_ = b.Results().Pass(rubric.M0, "contract", "create 202, delete 204, no key 401", ref)
		_ = b.Results().NotMeasured(rubric.D3, "capacity", rubric.CategoryUnsupportedByTarget,
			"server never answered 429 (observed 202 for 3 concurrent creates)")
	}()

	doc, err := b.Finalize()
	if err != nil {
		fmt.Println(err)
	}
	fmt.Println(report.SummaryLine(doc))
	// Output: verdict: incomplete, score 5 of 5 measured (measured 5 of 100), exit code 3
}
