package review

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/osb-capstone/acceptance/harness/report"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Load reads the bundle's review.json; an empty judgement when there is none.
func Load(dir string) (*report.Judgments, error) {
	j, err := report.LoadJudgments(dir)
	if err != nil {
		return nil, err
	}
	if j == nil {
		j = &report.Judgments{}
	}
	if j.Entries == nil {
		j.Entries = map[rubric.ID]report.Judgment{}
	}
	if j.Questions == nil {
		j.Questions = map[int]report.Judgment{}
	}
	return j, nil
}

// Save writes review.json atomically (temp file, fsync, rename), so an
// interrupted review keeps every answer given so far.
func Save(dir string, j *report.Judgments) error {
	b, err := json.MarshalIndent(j, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".review.json.tmp-*")
	if err != nil {
		return fmt.Errorf("review: save: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(append(b, '\n'))
	serr := f.Sync()
	cerr := f.Close()
	if werr != nil || serr != nil || cerr != nil {
		os.Remove(tmp)
		return fmt.Errorf("review: save: %v %v %v", werr, serr, cerr)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, report.ReviewFile))
}

// Merge lays newer judgments over older ones, item by item.
func Merge(old, newer *report.Judgments) *report.Judgments {
	out := &report.Judgments{Reviewer: newer.Reviewer, StartedAt: old.StartedAt, UpdatedAt: newer.UpdatedAt,
		Entries: map[rubric.ID]report.Judgment{}, Questions: map[int]report.Judgment{}}
	if out.Reviewer == "" {
		out.Reviewer = old.Reviewer
	}
	if out.StartedAt.IsZero() {
		out.StartedAt = newer.UpdatedAt
	}
	for k, v := range old.Entries {
		out.Entries[k] = v
	}
	for k, v := range newer.Entries {
		out.Entries[k] = v
	}
	for k, v := range old.Questions {
		out.Questions[k] = v
	}
	for k, v := range newer.Questions {
		out.Questions[k] = v
	}
	return out
}
