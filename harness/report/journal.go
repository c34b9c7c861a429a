package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// JournalFile is the outcome journal's name inside the bundle.
const JournalFile = "results.jsonl"

// Journal appends outcomes to results.jsonl, one JSON object per line, and
// fsyncs after each one. It implements rubric.Sink.
type Journal struct {
	mu sync.Mutex
	f  *os.File
	// key signs every line when the journal is bound to its run (OpenSigned).
	key    *journalKey
	keyDir string
	n      int64
}

// OpenJournal opens (creating or appending to) the journal at path.
func OpenJournal(path string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("report: open journal: %w", err)
	}
	return &Journal{f: f}, nil
}

// OpenSignedJournal opens a new journal whose every line is bound to run
// runID: a key made for it is kept in keyDir (see VerifyJournal).
func OpenSignedJournal(path, keyDir, runID string) (*Journal, error) {
	k, err := newJournalKey(keyDir, runID, filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	j, err := OpenJournal(path)
	if err != nil {
		return nil, err
	}
	j.key, j.keyDir = k, keyDir
	return j, nil
}

// Append writes one outcome and syncs it to disk.
func (j *Journal) Append(o rubric.Outcome) error {
	b, err := json.Marshal(o)
	if err != nil {
		return fmt.Errorf("report: journal: %w", err)
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return fmt.Errorf("report: journal closed; outcome %s/%s not written", o.ID, o.Verdict)
	}
	if j.key != nil {
		b = j.key.sign(b)
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("report: journal write: %w", err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("report: journal sync: %w", err)
	}
	j.n++
	return nil
}

// restore rewrites the journal at path from outs, the grader's own record,
// after VerifyJournal refused what is on disk (a submission edited it).
func (j *Journal) restore(path string, outs []rubric.Outcome) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	var buf bytes.Buffer
	for _, o := range outs {
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		if j.key != nil {
			b = j.key.sign(b)
		}
		buf.Write(append(b, '\n'))
	}
	j.n = int64(len(outs))
	if j.f == nil {
		return WriteFileAtomic(path, buf.Bytes())
	}
	if err := j.f.Truncate(0); err != nil {
		return err
	}
	if _, err := j.f.Write(buf.Bytes()); err != nil {
		return err
	}
	return j.f.Sync()
}

// Close closes the file; later Appends fail.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Close()
	j.f = nil
	if j.key != nil {
		// What the grader wrote, kept where the submission cannot reach:
		// a journal cut short afterwards is refused.
		j.key.Lines, j.key.Closed = j.n, true
		err = errors.Join(err, j.key.save(j.keyDir))
	}
	return err
}

// ReadJournal reads every complete outcome in the journal. A torn last line
// (the process died mid-write) is skipped and reported in skipped; a corrupt
// line elsewhere is an error.
func ReadJournal(path string) (outs []rubric.Outcome, skipped int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, 0, nil
		}
		return nil, 0, fmt.Errorf("report: read journal: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	var lines [][]byte
	for sc.Scan() {
		if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 {
			lines = append(lines, append([]byte(nil), l...))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, fmt.Errorf("report: read journal: %w", err)
	}
	for i, l := range lines {
		var o rubric.Outcome
		if err := json.Unmarshal(l, &o); err != nil {
			if i == len(lines)-1 && !bytes.HasSuffix(b, []byte("\n")) {
				skipped++
				continue
			}
			return outs, skipped, fmt.Errorf("report: journal line %d: %w", i+1, err)
		}
		outs = append(outs, o)
	}
	return outs, skipped, nil
}
