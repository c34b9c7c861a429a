// Package classreport is the class summary: over many report bundles,
// class.md, class.csv, class.json and class.html (WriteClassSummary, built
// from ReadClass), kept up to date after a review (RefreshClassSummary), and
// the merge of several grading runs (shards) into one summary (MergeClass,
// `acceptance class`). Every number is a bundle's own (its report.json; the
// final score from its review.json, loaded by report.ReviewedFinal): the
// summary computes statistics over them, never a score. It prints verdicts
// with the renderers' words (harness/report/render), never the other way
// round (internal/importrules).
package classreport
