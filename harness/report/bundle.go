package report

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Output file names inside the bundle.
const (
	MarkdownFile = "report.md"
	JSONFile     = "report.json"
	JUnitFile    = "junit.xml"
)

// Options tunes a bundle.
type Options struct {
	// Baselines configures evidence drift checks (zero value: not checked).
	Baselines Baselines
	// Now is the clock (tests); time.Now if nil.
	Now func() time.Time
	// Sinks also receive every outcome as it is recorded, after the journal
	// (e.g. a progress printer).
	Sinks []rubric.Sink
	// Review, when set, merges a reviewer's judgement into the rendered
	// document (harness/review provides it); nil: no review is merged.
	Review ReviewHook
	// JournalKeys, when set, binds the journal to its run: Open signs every
	// line with a key made for the run and kept in this directory, and
	// RenderDir refuses a journal that does not verify (VerifyJournal).
	// Empty: lines are unsigned and not verified.
	JournalKeys string
	// journalRefused: why Finalize rebuilt the journal from the grader's own
	// record (the one on disk did not verify).
	journalRefused string
}

// ReviewHook returns the final score for a bundle's measured document, or
// nil when the bundle has no review.
type ReviewHook func(dir string, d Document) (*Final, error)

// Bundle is one run's report directory. Every method is safe for concurrent
// use.
type Bundle struct {
	dir     string
	reg     *rubric.Registry
	opts    Options
	journal *Journal
	results *rubric.Results
	redact  *Redactor

	evMu   sync.Mutex
	evUsed map[string]bool

	mu   sync.Mutex // guards meta and rendering
	meta Meta
	// journalRefused: set once Finalize found the journal altered.
	journalRefused string
}

// Open creates dir (and dir/evidence), writes run.json and opens the journal.
// The returned bundle's Results() records into the journal as the run goes.
func Open(dir string, reg *rubric.Registry, meta Meta, opts Options) (*Bundle, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// A bundle belongs to one run: outcomes of an earlier run in the same
	// directory would be mixed into this run's verdict.
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("report: %s already holds files (%s, …); a report bundle needs an empty or new directory", dir, entries[0].Name())
	}
	if err := os.MkdirAll(filepath.Join(dir, EvidenceDir), 0o755); err != nil {
		return nil, fmt.Errorf("report: create bundle: %w", err)
	}
	if meta.StartedAt.IsZero() {
		meta.StartedAt = opts.Now()
	}
	meta.StartedAt = meta.StartedAt.UTC()
	if meta.TargetKind == "" {
		meta.TargetKind = rubric.TargetMock
	}
	if meta.Versions == nil {
		meta.Versions = map[string]string{}
	}
	if err := writeMeta(dir, meta); err != nil {
		return nil, fmt.Errorf("report: write run metadata: %w", err)
	}
	var j *Journal
	var err error
	if opts.JournalKeys != "" {
		j, err = OpenSignedJournal(filepath.Join(dir, JournalFile), opts.JournalKeys, meta.RunID)
	} else {
		j, err = OpenJournal(filepath.Join(dir, JournalFile))
	}
	if err != nil {
		return nil, err
	}
	b := &Bundle{dir: dir, reg: reg, opts: opts, journal: j, redact: &Redactor{}, evUsed: map[string]bool{}, meta: meta}
	b.results = rubric.NewResults(reg, append([]rubric.Sink{j}, opts.Sinks...)...)
	b.results.SetClock(opts.Now)
	return b, nil
}

// Dir is the bundle directory.
func (b *Bundle) Dir() string { return b.dir }

// Results is the collector steps record outcomes into; each outcome is
// journaled (fsync'd) before Record returns.
func (b *Bundle) Results() *rubric.Results { return b.results }

// Evidence returns the writer for evidence/<id>/.
func (b *Bundle) Evidence(id rubric.ID) *Evidence {
	return &Evidence{root: b.dir, id: id, redact: b.redact, mu: &b.evMu, used: b.evUsed}
}

// AddSecrets registers values that must never appear in evidence (API key,
// admin token, data-API credential, canaries).
func (b *Bundle) AddSecrets(values ...string) { b.redact.Add(values...) }

// Redactor exposes the bundle's redactor (e.g. for the progress printer).
func (b *Bundle) Redactor() *Redactor { return b.redact }

// SetVersion records a version discovered during the run (e.g. the
// server's) and rewrites run.json.
func (b *Bundle) SetVersion(name, version string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.meta.Versions[name] = version
	return writeMeta(b.dir, b.meta)
}

// Abort marks the run as ended early (a panic, a signal); the report then
// cannot say passed.
func (b *Bundle) Abort(reason string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.meta.Aborted == "" {
		b.meta.Aborted = reason
	} else {
		b.meta.Aborted += "; " + reason
	}
	_ = writeMeta(b.dir, b.meta)
}

// Finalize renders report.md, report.json and junit.xml from the journal
// on disk (and checks evidence drift). It may be called any number of times
// (e.g. deferred and again at the end); the end time is set by the first
// call. Every writer is attempted even if another fails.
func (b *Bundle) Finalize() (Document, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.meta.EndedAt.IsZero() {
		b.meta.EndedAt = b.opts.Now().UTC()
	}
	if err := writeMeta(b.dir, b.meta); err != nil {
		return Document{}, fmt.Errorf("report: write run metadata: %w", err)
	}
	opts := b.opts
	if opts.JournalKeys != "" {
		// The journal on disk is what the report is built from; a submission
		// that wrote into it (another run's lines, edited verdicts) is undone
		// from the grader's own record, and the report says so.
		var jerr *JournalError
		if err := VerifyJournal(b.dir, opts.JournalKeys); errors.As(err, &jerr) {
			b.journalRefused = "results.jsonl was altered during the run and was rebuilt from the grader's own record: " +
				strings.Join(jerr.Problems, "; ")
			if rerr := b.journal.restore(filepath.Join(b.dir, JournalFile), b.results.Outcomes()); rerr != nil {
				return Document{}, fmt.Errorf("report: restore journal: %w", rerr)
			}
		}
		opts.journalRefused = b.journalRefused
	}
	return render(b.dir, b.reg, b.meta, opts)
}

// Recover is deferred by the run: on a panic it marks the run aborted,
// finalizes (so everything measured so far is reported), then re-panics.
//
//	defer bundle.Recover()
func (b *Bundle) Recover() {
	if r := recover(); r != nil {
		b.Abort(fmt.Sprintf("panic: %v", r))
		_, _ = b.Finalize()
		panic(r)
	}
}

// Close closes the journal; later Records fail with an error. Idempotent.
func (b *Bundle) Close() error { return b.journal.Close() }

// RenderDir re-renders a bundle from its run.json and journal, e.g. one left
// by a killed process. A run that never finalized is marked aborted.
func RenderDir(dir string, reg *rubric.Registry, opts Options) (Document, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	meta, err := readMeta(dir)
	if err != nil {
		meta = Meta{Aborted: "run metadata unreadable: " + err.Error(), TargetKind: rubric.TargetMock}
	}
	if meta.EndedAt.IsZero() {
		if meta.Aborted == "" {
			meta.Aborted = "the run ended without finalizing its report (process killed?)"
		}
		meta.EndedAt = opts.Now().UTC()
	}
	if opts.JournalKeys != "" {
		if err := VerifyJournal(dir, opts.JournalKeys); err != nil {
			return Document{}, err
		}
	}
	return render(dir, reg, meta, opts)
}

func render(dir string, reg *rubric.Registry, meta Meta, opts Options) (Document, error) {
	outs, skipped, jerr := ReadJournal(filepath.Join(dir, JournalFile))
	doc, sum := Build(reg, meta, outs, nil)
	doc.JournalSkipped = skipped
	doc.Confinement = ReadConfinement(dir)
	doc.JournalRefused = opts.journalRefused
	doc.Drift = opts.Baselines.CheckDrift(dir, doc.TargetKind, sum)
	if doc.Drift == nil {
		doc.Drift = []DriftResult{}
	}
	errs := []error{jerr}
	if opts.Review != nil {
		f, err := opts.Review(dir, doc)
		errs = append(errs, err)
		doc.Final = f
	}
	errs = append(errs, writeOutputs(dir, &doc, AllOutputs))
	return doc, errors.Join(errs...)
}

// SummaryLine is the run's last progress line: verdict, score and how much
// weight was measured.
func SummaryLine(d Document) string {
	return fmt.Sprintf("verdict: %s, score %s of %s measured (measured %s of %s), exit code %d",
		d.Verdict, rubric.Num(d.Score.Earned), rubric.Num(d.Score.Measured),
		rubric.Num(d.Score.Measured), rubric.Num(d.Score.Total), d.ExitCode)
}
