package report

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/osb-capstone/acceptance/harness/regularfile"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// Journal lines are bound to their run: each carries the run's ID and an
// HMAC-SHA256 under a key made for that run alone, kept outside the bundle in
// a directory only the grader's user can read (JournalKeyDir). `acceptance
// render` verifies every line before it renders, so a submission that
// appends another run's lines (the reference's) to its own journal, edits a
// line, or drops one is refused, with the line named.

// EnvJournalKeys overrides where the per-run journal keys are kept.
const EnvJournalKeys = "ACCEPTANCE_JOURNAL_KEYS"

// DefaultJournalKeyDir is $ACCEPTANCE_JOURNAL_KEYS, else
// $XDG_STATE_HOME/acceptance/journal-keys, else
// ~/.local/state/acceptance/journal-keys.
func DefaultJournalKeyDir() (string, error) {
	if d := os.Getenv(EnvJournalKeys); d != "" {
		return filepath.Abs(d)
	}
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "acceptance", "journal-keys"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("report: no directory for journal keys (set %s): %w", EnvJournalKeys, err)
	}
	return filepath.Join(home, ".local", "state", "acceptance", "journal-keys"), nil
}

// journalKey is one run's key record, <key dir>/<run id>.json, mode 0600.
type journalKey struct {
	RunID string `json:"run_id"`
	Key   string `json:"key"` // hex, 32 random bytes
	// Bundle is the bundle directory's base name when the run began: a
	// bundle that claims another bundle's run is refused.
	Bundle string `json:"bundle"`
	// Lines is how many lines the grader wrote, recorded when the journal
	// closed (0 and Closed false for a run killed before that).
	Lines  int64 `json:"lines"`
	Closed bool  `json:"closed"`
	key    []byte
}

var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func journalKeyPath(dir, runID string) (string, error) {
	if !runIDPattern.MatchString(runID) {
		return "", fmt.Errorf("run ID %q is not one the grader makes", runID)
	}
	return filepath.Join(dir, runID+".json"), nil
}

// privateDir makes dir (0700) if needed and checks that it is a directory,
// not a link, and that no one but its owner can read or write it.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("report: journal key directory: %w", err)
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("report: journal key directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("report: journal key directory %s is not a directory", dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("report: journal key directory %s is open to others (mode %o); it must be 0700", dir, st.Mode().Perm())
	}
	return nil
}

func newJournalKey(keyDir, runID, bundleDir string) (*journalKey, error) {
	if err := privateDir(keyDir); err != nil {
		return nil, err
	}
	p, err := journalKeyPath(keyDir, runID)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	k := &journalKey{RunID: runID, Bundle: filepath.Base(filepath.Clean(bundleDir)), key: make([]byte, 32)}
	if _, err := rand.Read(k.key); err != nil {
		return nil, err
	}
	k.Key = hex.EncodeToString(k.key)
	b, _ := json.Marshal(k)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("report: journal key: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("report: journal key: %w", err)
	}
	return k, f.Close()
}

func (k *journalKey) save(keyDir string) error {
	p, err := journalKeyPath(keyDir, k.RunID)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(k)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func loadJournalKey(keyDir, runID string) (*journalKey, error) {
	p, err := journalKeyPath(keyDir, runID)
	if err != nil {
		return nil, err
	}
	b, err := regularfile.ReadMax(p, 4096)
	if err != nil {
		return nil, err
	}
	var k journalKey
	if err := json.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("journal key %s: %w", p, err)
	}
	if k.key, err = hex.DecodeString(k.Key); err != nil || len(k.key) != 32 || k.RunID != runID {
		return nil, fmt.Errorf("journal key %s is damaged", p)
	}
	return &k, nil
}

func (k *journalKey) mac(signed []byte) string {
	h := hmac.New(sha256.New, k.key)
	h.Write(signed)
	return hex.EncodeToString(h.Sum(nil))
}

// sign turns an outcome's JSON object {...} into a journal line
// {...,"run":"R","mac":"HEX"}: the MAC covers every byte before ,"mac".
func (k *journalKey) sign(obj []byte) []byte {
	signed := append(append(bytes.TrimSuffix(obj, []byte("}")), `,"run":`+strconv.Quote(k.RunID)...), '}')
	line := append(bytes.TrimSuffix(signed, []byte("}")), `,"mac":"`+k.mac(signed)+`"}`...)
	return line
}

var macSuffix = regexp.MustCompile(`,"mac":"([0-9a-f]{64})"\}$`)

// JournalError lists why a journal is refused, line by line.
type JournalError struct {
	Bundle   string
	Problems []string
}

func (e *JournalError) Error() string {
	s := fmt.Sprintf("%s: journal refused (%s is bound to its run):", e.Bundle, JournalFile)
	for _, p := range e.Problems {
		s += "\n  " + p
	}
	return s
}

// VerifyJournal checks every line of dir's journal against its run's key in
// keyDir: the bundle's run must have a key there, made for this bundle; every
// line must be signed by that key, for that run, in sequence (1, 2, …); and a
// journal the grader closed must hold exactly the lines it wrote. A torn last
// line (a killed run) is allowed. It returns nil or a *JournalError naming
// each refused line (or another error when the key cannot be read).
func VerifyJournal(dir, keyDir string) error {
	meta, err := readMeta(dir)
	if err != nil {
		return err
	}
	k, err := loadJournalKey(keyDir, meta.RunID)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &JournalError{Bundle: dir, Problems: []string{fmt.Sprintf(
				"no key for run %q in %s: the run was not graded on this machine by this user (render it where it was graded), or run.json names a run that never was", meta.RunID, keyDir)}}
		}
		return fmt.Errorf("report: %s: %w", dir, err)
	}
	jerr := &JournalError{Bundle: dir}
	if base := filepath.Base(filepath.Clean(dir)); base != k.Bundle {
		jerr.Problems = append(jerr.Problems, fmt.Sprintf("run %s was graded into a bundle named %q, not %q: this bundle claims another's run", k.RunID, k.Bundle, base))
		return jerr
	}
	b, err := regularfile.ReadMax(filepath.Join(dir, JournalFile), 256<<20)
	if err != nil {
		return fmt.Errorf("report: read journal: %w", err)
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
		return fmt.Errorf("report: read journal: %w", err)
	}
	torn := len(b) > 0 && !bytes.HasSuffix(b, []byte("\n"))
	var want int64 = 1
	for i, l := range lines {
		n := i + 1
		m := macSuffix.FindSubmatchIndex(l)
		if m == nil {
			if torn && i == len(lines)-1 {
				continue
			}
			jerr.Problems = append(jerr.Problems, fmt.Sprintf("line %d is not signed: the grader did not write it", n))
			continue
		}
		signed := append(append([]byte(nil), l[:m[0]]...), '}')
		var o struct {
			rubric.Outcome
			Run string `json:"run"`
		}
		if err := json.Unmarshal(signed, &o); err != nil {
			jerr.Problems = append(jerr.Problems, fmt.Sprintf("line %d is not an outcome: %v", n, err))
			continue
		}
		if o.Run != k.RunID {
			jerr.Problems = append(jerr.Problems, fmt.Sprintf("line %d (%s %s) belongs to another run (%q), not this one (%q)", n, o.ID, o.Verdict, o.Run, k.RunID))
			continue
		}
		if !hmac.Equal([]byte(k.mac(signed)), l[m[2]:m[3]]) {
			jerr.Problems = append(jerr.Problems, fmt.Sprintf("line %d (%s %s) is forged or edited: its signature does not verify under this run's key", n, o.ID, o.Verdict))
			continue
		}
		if o.Seq != want && len(jerr.Problems) == 0 { // after a refused line, only that line is named
			jerr.Problems = append(jerr.Problems, fmt.Sprintf("line %d has sequence number %d where %d was due: a line was removed, repeated or moved", n, o.Seq, want))
		}
		want = o.Seq + 1
	}
	if k.Closed && want-1 != k.Lines && len(jerr.Problems) == 0 {
		jerr.Problems = append(jerr.Problems, fmt.Sprintf("the grader wrote %d lines; the journal holds %d signed ones (lines were removed)", k.Lines, want-1))
	}
	if len(jerr.Problems) > 0 {
		return jerr
	}
	return nil
}
