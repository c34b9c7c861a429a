package report

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/osb-capstone/acceptance/harness/confine"
)

// Confinement is how the submission's commands were confined
// (harness/confine), read from their records (evidence/**/run.json and
// invocation.json): a run whose commands ran unconfined, or confined only in
// part, says so in the report header.
type Confinement struct {
	// Mode is the weakest of the commands': "confined", "partial" or "off".
	Mode string `json:"mode"`
	// Level is the weakest confinement level of the commands' (full, uid
	// or none: docs/confinement.md, "Levels"); Holds and Lacks are what
	// holds at that level and what does not.
	Level    confine.Level `json:"level"`
	Holds    []string      `json:"holds"`
	Lacks    []string      `json:"lacks"`
	Commands int           `json:"commands"`
	// Degraded are the distinct reasons something was not enforced, each
	// with how many commands it concerned.
	Degraded []string `json:"degraded,omitempty"`
	// Refused counts the connections the commands' networks refused.
	Refused int `json:"refused_connections,omitempty"`
	// RanReference are the evidence directories of commands that ran the
	// bundled reference ({acceptance} reference): provenance, no score change.
	RanReference []string `json:"ran_reference,omitempty"`
}

type confinedRecord struct {
	Result *struct {
		RanReference bool `json:"ran_reference"`
		NotStarted   bool `json:"not_started"`
		Confinement  *struct {
			Mode         string        `json:"mode"`
			Level        confine.Level `json:"level"`
			Degraded     []string      `json:"degraded"`
			RefusedCount int           `json:"refused_count"`
		} `json:"confinement"`
	} `json:"result"`
}

// ReadConfinement summarises the commands' confinement in a bundle (nil
// when no command left a record).
func ReadConfinement(dir string) *Confinement {
	root := filepath.Join(dir, EvidenceDir)
	c := &Confinement{}
	reasons := map[string]int{}
	var levels []confine.Level
	rank := map[string]int{"confined": 1, "partial": 2, "off": 3}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if n := d.Name(); n == "out" || n == "input" || strings.HasPrefix(n, "home-") {
				return filepath.SkipDir // the submission's own files
			}
			return nil
		}
		if d.Name() != "run.json" && d.Name() != "invocation.json" {
			return nil
		}
		b, err := readCapped(p, 4<<20)
		if err != nil {
			return nil
		}
		var rec confinedRecord
		if json.Unmarshal(b, &rec) != nil || rec.Result == nil || rec.Result.NotStarted {
			return nil // no record, or a command that never started (nothing ran, confined or not)
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(p))
		c.Commands++
		if rec.Result.RanReference {
			c.RanReference = append(c.RanReference, filepath.ToSlash(rel))
		}
		mode, level := "off", confine.LevelNone
		var degraded []string
		if cf := rec.Result.Confinement; cf != nil {
			mode, degraded, level = cf.Mode, cf.Degraded, cf.Level
			if level == "" { // a record from before levels: a box was full
				level = confine.LevelFull
				if mode == "off" {
					level = confine.LevelNone
				}
			}
			c.Refused += cf.RefusedCount
		} else {
			degraded = []string{"confinement: this harness recorded none"}
		}
		if rank[mode] > rank[c.Mode] {
			c.Mode = mode
		}
		levels = append(levels, level)
		for _, r := range degraded {
			reasons[r]++
		}
		return nil
	})
	if c.Commands == 0 {
		return nil
	}
	c.Level = confine.Weakest(levels...)
	c.Holds, c.Lacks = confine.Holds(c.Level), confine.Lacks(c.Level)
	for r, n := range reasons {
		c.Degraded = append(c.Degraded, fmt.Sprintf("%s (%d of %d commands)", r, n, c.Commands))
	}
	sort.Strings(c.Degraded)
	sort.Strings(c.RanReference)
	return c
}

func readCapped(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > max {
		return nil, fmt.Errorf("%s: not a regular file under %d bytes", p, max)
	}
	b := make([]byte, st.Size())
	_, err = f.ReadAt(b, 0)
	if err != nil && st.Size() > 0 {
		return nil, err
	}
	return b, nil
}

// Header is the report header's line on confinement ("" when confined).
func (c *Confinement) Header() string {
	if c == nil {
		return ""
	}
	if c.Level == confine.LevelUID {
		return "Confinement level uid: each command ran as a uid of its own with rlimits, without namespaces (this machine allows no more). It did not have: " + strings.Join(c.Lacks, "; ") + ". " + strings.Join(c.Degraded, "; ")
	}
	switch c.Mode {
	case "off":
		return "Confinement OFF: the submission's commands ran unconfined (as the grader's own processes); nothing stopped them from reading or changing the grader, other submissions or this report. " + strings.Join(c.Degraded, "; ")
	case "partial":
		return "Confinement PARTIAL: some protections could not be enforced on this machine: " + strings.Join(c.Degraded, "; ")
	}
	return ""
}
