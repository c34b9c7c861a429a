package recompute

import "fmt"

// Verification is the accuracy evidence for one subject run: every claimed
// metric against the recomputation, "rows" always included, and whether
// each claimed number appears in report.md.
type Verification struct {
	// Comparisons has one entry per claimed metric, plus "rows" when the
	// subject did not claim it (Status StatusNotClaimed, Claimed 0).
	Comparisons []Comparison  `json:"comparisons"`
	Report      []ReportCheck `json:"report"`
	// Failures are human-readable reasons for failing accuracy: mismatches,
	// a missing rows claim, claimed numbers absent from report.md.
	// Unverifiable names are listed in Unverifiable, not in Failures.
	Failures     []string `json:"failures"`
	Unverifiable []string `json:"unverifiable"`
	Matched      int      `json:"matched"`
}

// OK reports no failures and at least two verified numbers (the course asks
// for at least two key numbers recomputed on the host).
func (v *Verification) OK() bool { return len(v.Failures) == 0 && v.Matched >= 2 }

// Verify checks a subject's claimed metrics (summary.json "metrics") and its
// report.md text against the recomputation.
func (s *Stats) Verify(metrics map[string]float64, report string) *Verification {
	v := &Verification{Failures: []string{}, Unverifiable: []string{}}
	v.Comparisons = s.Compare(metrics)
	claimedRows := false
	for name := range metrics {
		if Normalize(name) == "rows" {
			claimedRows = true
		}
	}
	if !claimedRows {
		r := float64(s.Rows)
		v.Comparisons = append(v.Comparisons, Comparison{Name: "rows", Recomputed: &r,
			Status: StatusNotClaimed, Hint: "the subject did not claim \"rows\" in metrics; the row count is always checked"})
		v.Failures = append(v.Failures, fmt.Sprintf("rows not claimed (recomputed %d)", s.Rows))
	}
	for _, c := range v.Comparisons {
		switch c.Status {
		case StatusMatch:
			v.Matched++
		case StatusUnverifiable:
			v.Unverifiable = append(v.Unverifiable, c.Name+": "+c.Hint)
		case StatusMismatch:
			v.Failures = append(v.Failures, fmt.Sprintf("%s: %s", c.Name, c.Hint))
		}
	}
	v.Report = CheckReport(report, metrics)
	for _, rc := range v.Report {
		if !rc.Found {
			v.Failures = append(v.Failures, fmt.Sprintf("%s = %s does not appear in report.md", rc.Name, fmtNum(rc.Claimed)))
		}
	}
	return v
}
