package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/osb-capstone/acceptance/fixtures"
	"github.com/osb-capstone/acceptance/harness/recompute"
)

// Inputs is what every submission graded in one session gets alike, made
// once: the generated large CSV, and the harness's own recomputation of each
// input, keyed by the sha256 of its content (a copy that differs in one byte
// is recomputed). Each submission still gets its own copy of every input in
// its bundle; nothing a submission can write is shared.
type Inputs struct {
	dir  string   // private (0700), removed by Close
	lock *os.File // dir/.lock, flocked while this session lives

	mu    sync.Mutex
	large struct {
		once sync.Once
		path string
		err  error
	}
	stats map[string]*statsOnce
}

type statsOnce struct {
	once  sync.Once
	stats *recompute.Stats
	err   error
}

// inputsPrefix names the sessions' directories in the temporary directory.
const inputsPrefix = "acceptance-inputs-"

// NewInputs makes an empty set in a private temporary directory, locked for
// the session's life, after removing the directories of sessions that died
// without closing theirs (a SIGKILLed grade left its 50 MB input behind).
func NewInputs() (*Inputs, error) {
	reapDeadInputs(os.TempDir())
	dir, err := os.MkdirTemp("", inputsPrefix)
	if err != nil {
		return nil, err
	}
	lock, err := lockInputs(dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &Inputs{dir: dir, lock: lock, stats: map[string]*statsOnce{}}, nil
}

// Close removes the generated files.
func (in *Inputs) Close() {
	if in != nil && in.dir != "" {
		_ = os.RemoveAll(in.dir)
		if in.lock != nil {
			_ = in.lock.Close()
		}
	}
}

// LargeCSV writes the manifest's large CSV into dir: generated once per
// session, then copied (and checked byte for byte by its hash when it is
// recomputed).
func (in *Inputs) LargeCSV(dir string) (string, error) {
	in.large.once.Do(func() {
		in.large.path, _, in.large.err = fixtures.GenerateLargeFile(in.dir)
	})
	if in.large.err != nil {
		return "", in.large.err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, filepath.Base(in.large.path))
	if err := copyFile(in.large.path, dst); err != nil {
		return "", fmt.Errorf("copying the large CSV: %w", err)
	}
	return dst, nil
}

// Recompute is recompute.File(path), computed once per content: a file
// whose sha256 was recomputed before gets those statistics (with its own
// path), anything else is recomputed.
func (in *Inputs) Recompute(path string) (*recompute.Stats, error) {
	sum, err := fileSHA256(path)
	if err != nil {
		return recompute.File(path)
	}
	in.mu.Lock()
	o := in.stats[sum]
	if o == nil {
		o = &statsOnce{}
		in.stats[sum] = o
	}
	in.mu.Unlock()
	o.once.Do(func() { o.stats, o.err = recompute.File(path) })
	if o.err != nil || o.stats == nil || o.stats.SHA256 != sum {
		// Failed, or the file changed under the first reader: never reuse.
		in.mu.Lock()
		if in.stats[sum] == o {
			delete(in.stats, sum)
		}
		in.mu.Unlock()
		return recompute.File(path)
	}
	st := *o.stats // the statistics are read-only; only the path is the caller's
	st.Path = path
	return &st, nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
