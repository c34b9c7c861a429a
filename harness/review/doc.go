// Package review records a reviewer's judgement of a report bundle and turns
// it into the final score out of 100.
//
// The harness measures most of the rubric; some of it only a person can
// judge: the cost estimate (criterion cost), whether another person can
// reproduce the run from the README (maintainability), the demonstration
// (M5) and the course's 15 defense questions (scored inside M5). Review walks
// a reviewer through exactly those entries — interactively (Walk: prompts
// with defaults, every answer saved to the bundle's review.json as it is
// given, so a review can be resumed) or from an answers file (ParseAnswers,
// documented in the README) — then re-renders the bundle with the final score
// and the provenance of every point (measured by the harness, judged by a
// reviewer, or a reviewer's override).
//
// Rules (Validate enforces them, with one clear error per field):
//   - points lie within the entry's weight (its share of its scoring item:
//     item weight / number of inputs; M5's half that is not the defense
//     questions; a question 1/15 of the other half);
//   - a reviewer cannot turn a measured failure, or a flaky measurement
//     (passed only some repetitions of --repeat), into a pass or points: an
//     answer on an entry the harness measured is an override and needs
//     override_reason, which is shown as such everywhere the score is shown;
//   - a timeout or a harness error is never overridden (re-run instead), and
//     an entry no scenario measured in this run cannot be overridden either;
//   - a failed verdict needs a note saying what the submission did.
//
// Walk offers only what Validate accepts: an entry measured failed or flaky
// is announced as such and answered failed (0 points) or passed with an
// override reason asked at once; an --override asks its reason first; items
// nothing can be recorded for (M5's questions while its measured part is
// failed or flaky, a timed-out entry) are shown and skipped.
//
// report.json is never rewritten: the review lives in review.json and is
// merged at render time (report.md, report.html, results.json).
package review
