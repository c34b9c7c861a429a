// Package report is the report core: the document (report.json's model), the
// journal, the bundle and reading and writing it. It writes the run's report
// bundle into --out as the run goes:
//
//	results.jsonl          journal: one rubric.Outcome per line, appended and fsync'd as recorded
//	run.json               run metadata, written at Open (and rewritten at Finalize)
//	evidence/<id>/…        transcripts, command outputs, file hashes (Evidence writers)
//	report.md              for people: verdict, score table, one row per entry with reason,
//	                       evidence links and a reproduce command, evidence drift
//	report.json            machine-readable, schema_version "1"
//	junit.xml              one testcase per criterion/milestone/drill
//	report.html            self-contained page: verdict, score, the target preflight (never
//	                       scored), coloured rubric table, evidence links, a timeline (inline
//	                       SVG) of each subject run and of each contract, reap and test command
//	results.json           Gradescope autograder results (gradescope.schema.json)
//	review.json            a reviewer's judgement (harness/review), merged at render time
//	                       into report.md/html, junit.xml and results.json — never into
//	                       report.json, whose measured content a review leaves byte-identical
//
// The final writers render only from the journal (and run.json), never from
// in-memory state, so what they show is exactly what survived on disk: a run
// that panics, or a process that is killed, loses nothing already measured.
// Finalize is idempotent and is meant to be deferred; Recover finalizes on a
// panic; RenderDir re-renders a bundle left by a killed process.
//
// A run marked aborted (Bundle.Abort, Recover, or RenderDir of a bundle that
// never finalized) is never "passed": its verdict becomes incomplete and its
// exit code 2 (harness error), unless graded failures already make it
// not_passed (exit code 1).
//
// cucumber.json is godog's own formatter output; this package does not write
// it, but RepairCucumber makes an empty or torn one (a killed run) valid.
//
// The files are written by the renderers of harness/report/render (one file
// per format, one verdict-to-words table), which register themselves with
// Register; this package imports no renderer (internal/importrules). A
// program that writes bundles imports render (harness/core and harness/review
// do); without it, writing an output fails with an error naming the package.
//
// Final scores: ComputeFinal hands a measured Document and a reviewer's
// Judgments to the rubric (harness/rubric score.go, the one place scores are
// computed) — the points of every entry with their provenance (measured,
// judged, override, pending, none); harness/review validates and records the
// judgement. Scored sets the final score the renderers print (d.Points)
// before any of them runs, and ReviewedFinal computes a reviewed bundle's when
// it is loaded; the renderers and the class summary compute no score
// (internal/importrules checks it).
//
// Beside the core: harness/report/render (report.md, report.json, junit.xml,
// report.html, results.json), harness/report/classreport (the class summary:
// class.md/csv/json/html over many bundles, and the merge of several grading
// runs) and harness/report/compare (`acceptance diff`, the upgrade check).
//
// # Evidence drift
//
// Each entry's evidence files are normalised (Normalize: UUIDs, ids, RFC 3339
// and epoch timestamps, request ids, loopback ports, durations and long hex
// digests redacted) and matched against a stored baseline with go-snaps, in
// go-snaps' standalone .snap format:
//
//	harness/report/baselines/<target>/<id>_1.snap
//
// (the directory is Options.Baselines.Dir; "_1" is go-snaps' standalone
// numbering). A grading run never writes baselines: only Baselines.Update
// (set from UPDATE_BASELINES=1 by BaselinesFromEnv, used by `make
// update-baselines`) does. A mismatch is reported as drift in report.md/report.json — it is not a
// failed criterion. See drift.go for how go-snaps is driven outside testing.T.
package report
