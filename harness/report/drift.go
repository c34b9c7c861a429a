package report

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gkampitakis/go-snaps/snaps"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// DriftStatus is the outcome of comparing evidence with its baseline.
type DriftStatus string

const (
	DriftMatch      DriftStatus = "match"
	DriftChanged    DriftStatus = "drift"
	DriftNoBaseline DriftStatus = "no_baseline"
	DriftUpdated    DriftStatus = "baseline_written"
	DriftSkipped    DriftStatus = "not_checked"
)

// DriftResult is one entry's drift check.
type DriftResult struct {
	ID       rubric.ID   `json:"id"`
	Status   DriftStatus `json:"status"`
	Baseline string      `json:"baseline"` // path of the .snap file as configured
	Detail   string      `json:"detail,omitempty"`
	Diff     string      `json:"diff,omitempty"`
}

// Baselines configures drift checking.
type Baselines struct {
	// Dir holds one subdirectory per target kind; empty disables drift checks.
	Dir string
	// Update writes (creates or replaces) baselines instead of reporting drift.
	// Only `UPDATE_BASELINES=1` (make update-baselines) sets it; a grading run never does.
	Update bool
	// Exclude, when set, leaves evidence files out of snapshots: drift is about
	// the platform's contract, and some evidence records a subject's own
	// behaviour (its outputs, the order of its concurrent calls), which no
	// OpenSandbox upgrade explains.
	Exclude func(ref string) bool
	// Sub, when set, replaces the target kind as the subdirectory (the docker
	// target keeps its own baselines in <Dir>/docker).
	Sub string
}

func (b Baselines) sub(target rubric.Target) string {
	if b.Sub != "" {
		return b.Sub
	}
	return string(target)
}

// DefaultBaselineDir is the baselines' place in the repository.
const DefaultBaselineDir = "harness/report/baselines"

// BaselinesFromEnv returns Baselines for dir with Update set iff
// UPDATE_BASELINES=1.
func BaselinesFromEnv(dir string) Baselines {
	return Baselines{Dir: dir, Update: os.Getenv("UPDATE_BASELINES") == "1"}
}

// snapMu serialises go-snaps calls: its standalone registry numbers
// snapshots per path per "test", and we reset it after every call.
var snapMu sync.Mutex

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// snapLocation is go-snaps' "at <path>.snap:<line>" line in a mismatch.
var snapLocation = regexp.MustCompile(`(?m)^at \S*\.snap:(\d+)$`)

// fakeT satisfies go-snaps' testingT outside `go test`. go-snaps reports a
// mismatch through Error (with its diff) and a write through Log, and asks
// for cleanups that reset its per-test counters; we collect all three.
//
// Why a fake T rather than our own file compare: go-snaps owns the .snap
// format, the diff rendering and the create/update rules, so baselines made by
// `make update-baselines` and those compared in a grading run are the same files
// handled by the same code. Two go-snaps behaviours are fenced off here:
// UPDATE_SNAPS=always makes go-snaps rewrite regardless of its Update option,
// so a grading run refuses to check drift while it is set; and on CI (as
// detected by go-snaps' ciinfo) go-snaps never creates or updates, so
// baselines must be written outside CI.
type fakeT struct {
	name     string
	errors   []string
	logs     []string
	cleanups []func()
}

func (f *fakeT) Helper()              {}
func (f *fakeT) Skip(...any)          {}
func (f *fakeT) Skipf(string, ...any) {}
func (f *fakeT) SkipNow()             {}
func (f *fakeT) Name() string         { return f.name }
func (f *fakeT) Error(args ...any)    { f.errors = append(f.errors, fmt.Sprint(args...)) }
func (f *fakeT) Log(args ...any)      { f.logs = append(f.logs, fmt.Sprint(args...)) }
func (f *fakeT) Cleanup(fn func())    { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) runCleanups() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// BaselinePath is where the baseline for id on target lives.
func (b Baselines) BaselinePath(target rubric.Target, id rubric.ID) string {
	return filepath.Join(b.Dir, b.sub(target), string(id)+"_1.snap")
}

// Check compares the normalised snapshot text of one entry with its baseline.
func (b Baselines) Check(target rubric.Target, id rubric.ID, snapshot string) DriftResult {
	res := DriftResult{ID: id, Baseline: b.BaselinePath(target, id)}
	if b.Dir == "" {
		res.Status, res.Detail = DriftSkipped, "no baseline directory configured"
		return res
	}
	if !b.Update && os.Getenv("UPDATE_SNAPS") == "always" {
		res.Status, res.Detail = DriftSkipped, "UPDATE_SNAPS=always would make go-snaps rewrite baselines during a grading run; unset it"
		return res
	}
	dir, err := filepath.Abs(filepath.Join(b.Dir, b.sub(target)))
	if err != nil {
		res.Status, res.Detail = DriftSkipped, err.Error()
		return res
	}
	_, statErr := os.Stat(res.Baseline)
	existed := statErr == nil
	if !existed && !b.Update {
		res.Status, res.Detail = DriftNoBaseline, "no baseline yet (write one with UPDATE_BASELINES=1)"
		return res
	}

	snapMu.Lock()
	defer snapMu.Unlock()
	t := &fakeT{name: "baseline/" + string(id)}
	snaps.WithConfig(snaps.Dir(dir), snaps.Filename(string(id)), snaps.Raw(), snaps.Update(b.Update)).
		MatchStandaloneSnapshot(t, snapshot)
	t.runCleanups()

	switch {
	case len(t.errors) > 0 && b.Update:
		res.Status, res.Detail = DriftSkipped, "go-snaps did not write the baseline (on CI it never does): "+firstLine(ansi.ReplaceAllString(t.errors[0], ""))
	case len(t.errors) > 0:
		res.Status = DriftChanged
		res.Detail = "normalised evidence differs from the baseline"
		res.Diff = strings.TrimSpace(ansi.ReplaceAllString(strings.Join(t.errors, "\n"), ""))
		// go-snaps names the file relative to the working directory, which
		// would put this machine's layout in the report: name it as configured.
		res.Diff = snapLocation.ReplaceAllString(res.Diff, "at "+strings.ReplaceAll(filepath.ToSlash(res.Baseline), "$", "$$")+":$1")
	case b.Update && len(t.logs) > 0:
		res.Status, res.Detail = DriftUpdated, ansi.ReplaceAllString(strings.Join(t.logs, "; "), "")
	default:
		res.Status = DriftMatch
	}
	return res
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// maxSnapshotFile bounds what one evidence file contributes to a snapshot:
// bigger files (inputs, artifacts) appear as a placeholder.
const maxSnapshotFile = 256 << 10

// SnapshotText is the normalised evidence of one entry: every evidence file
// it references that lies inside the bundle, in name order, each under a
// header. Binary files appear as a placeholder (their bytes are random).
func SnapshotText(bundleDir string, evidence []string, exclude func(string) bool) (string, bool) {
	var refs []string
	for _, r := range evidence {
		if exclude == nil || !exclude(r) {
			refs = append(refs, r)
		}
	}
	sort.Strings(refs)
	var b strings.Builder
	n := 0
	for _, ref := range refs {
		p, ok := insideBundle(bundleDir, ref)
		if !ok {
			continue
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		n++
		fmt.Fprintf(&b, "=== %s\n", Normalize(ref))
		if fi.Size() > maxSnapshotFile {
			b.WriteString("<large file>\n")
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			b.WriteString("<unreadable>\n")
			continue
		}
		if !utf8.Valid(data) || strings.ContainsRune(string(data), 0) {
			b.WriteString("<binary>\n")
			continue
		}
		text := string(data)
		if abs, err := filepath.Abs(bundleDir); err == nil {
			text = strings.ReplaceAll(text, abs, "<bundle>") // evidence may name files by absolute path
		}
		b.WriteString(strings.TrimRight(Normalize(text), "\n"))
		b.WriteString("\n")
	}
	return b.String(), n > 0
}

// insideBundle resolves a bundle-relative ref, refusing anything outside.
func insideBundle(bundleDir, ref string) (string, bool) {
	if ref == "" || filepath.IsAbs(ref) {
		return "", false
	}
	clean := filepath.Clean(filepath.FromSlash(ref))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.Join(bundleDir, clean), true
}

// CheckDrift compares every entry's evidence in the bundle with its baseline.
func (b Baselines) CheckDrift(bundleDir string, target rubric.Target, sum rubric.Summary) []DriftResult {
	var out []DriftResult
	for _, id := range sum.Order {
		text, ok := SnapshotText(bundleDir, sum.Results[id].Evidence, b.Exclude)
		if !ok {
			continue
		}
		out = append(out, b.Check(target, id, text))
	}
	return out
}
