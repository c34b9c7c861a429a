// Package rubric is the capstone's grading rubric as code: one registry with
// stable IDs for the course's acceptance criteria, milestones, fault drills
// and scoring items with the course's weights (course.go; the counts are
// pinned in one place, TestCourseRegistryShape); the
// verdict vocabulary; a concurrency-safe collector of per-ID outcomes; the
// aggregation, scoring and overall-verdict rules; and the check that ties the
// registry to the feature files' tags.
//
// # Tags
//
// A scenario feeds an entry through a tag naming it: @criterion:<id>,
// @milestone:<id>, @drill:<id> (M0, D1, …). Scoring items are never tagged; they
// are fed by the entries listed in their Inputs.
//
// A scenario records one outcome per entry it is tagged with (the steps'
// recordOutcome). They agree, except when a step failed for something of the
// submission's that violates no property: the entries marked FailOnlyOnViolation
// (the security criteria, M3, D1, D4) are then not measured for that
// scenario (precondition_unmet), while its other entries fail. A harness
// fault is a harness_error for every entry; a violation fails every entry.
//
// # Aggregation (per ID, see Aggregate)
//
//   - any failed outcome → failed;
//   - else any flaky outcome → flaky. With --repeat N, a scenario that passed
//     in some repetitions and failed (or timed out) in others records one
//     flaky outcome ("flaky: passed k of N repetitions …"), which supersedes
//     that scenario's passed, failed and timed-out outcomes for the entry (the
//     failures' reasons are kept in the reason). Flaky is never passed;
//   - else any harness_error → harness_error;
//   - else any not_measured/timeout outcome → not_measured (timeout). A timeout
//     is never passed and never earns points, even if another scenario passed;
//   - else at least one passed → passed (other not_measured outcomes are noted
//     in the reason);
//   - else only not_measured outcomes → not_measured, reasons joined, category
//     by precedence timeout > precondition_unmet > unsupported_by_target >
//     reviewer_judgment; except that on a target the registry says cannot
//     measure the entry, precondition_unmet becomes unsupported_by_target with
//     the registry's reason first (meeting the precondition, e.g. giving a
//     submission a model, would not make the entry measurable there);
//   - no outcome at all → not_measured: the registry's reason when the entry is
//     reviewer judgment (category reviewer_judgment) or cannot be measured on the
//     chosen target (unsupported_by_target); otherwise "no scenario measured
//     this" with no category.
//
// Timeouts: a measurement that ran out of time (the server or the harness did
// not answer in time) is recorded with NotMeasured(…, CategoryTimeout, …). A
// subject that exceeded its own wall-clock budget is a graded failure of that
// subject and must be recorded with Fail (budget), never as a timeout.
//
// # Scoring (see Score)
//
// For a scoring item with weight W and n inputs, of which m are measured
// (aggregated passed, failed or flaky) and p passed:
//
//	measured = W × m / n
//	earned   = W × p / n     (= measured × p/m, the passed fraction of its measured inputs)
//
// not_measured (any category, timeout included) and harness_error inputs are
// excluded from m. A flaky input is measured and earns nothing. The run's score is Σearned out of Σmeasured, and the report
// always says "measured X of 100" (Σmeasured of ΣW = 100).
//
// # Overall verdict (see Evaluate)
//
//   - not_passed: any criterion, milestone or drill failed or was flaky — in
//     particular a failed or flaky security criterion (network, credential,
//     injection, isolation) whatever the score. A flaky entry gates like a
//     failure: the submission was seen failing it (a leak in one run of three
//     is a leak), so it is never "incomplete" and never passed;
//   - incomplete: nothing failed, but an entry that the chosen target should have
//     been able to measure was not measured (its category is not
//     unsupported_by_target nor reviewer_judgment), or a harness_error occurred;
//   - passed otherwise.
//
// Exit codes (ExitCode): 0 passed, 1 graded failures (not_passed), 2 usage or
// harness error (harness_error with no graded failure), 3 incomplete.
package rubric
