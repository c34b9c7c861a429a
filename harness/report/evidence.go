package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/osb-capstone/acceptance/harness/osb"
	"github.com/osb-capstone/acceptance/harness/rubric"
)

// EvidenceDir is the evidence root inside the bundle.
const EvidenceDir = "evidence"

// Redactor replaces secret values (API keys, tokens, canaries) in evidence
// text with "[REDACTED sha256:<first 12 hex>]" so evidence can be shared and
// still matched against a fingerprint. Safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	secrets []string
}

// Add registers secret values; empty values and values shorter than 4
// characters are ignored (they would redact ordinary text).
func (r *Redactor) Add(values ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range values {
		if len(v) >= 4 {
			r.secrets = append(r.secrets, v)
		}
	}
	// Longest first so a secret containing another is replaced whole.
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

// Redact replaces every registered secret in s.
func (r *Redactor) Redact(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, v := range r.secrets {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, "[REDACTED sha256:"+Fingerprint(v)+"]")
		}
	}
	return s
}

// Fingerprint is the first 12 hex digits of sha256(v).
func Fingerprint(v string) string {
	sum := sha256.Sum256([]byte(v))
	return hex.EncodeToString(sum[:])[:12]
}

// Evidence writes files under evidence/<id>/ of a bundle. Every writer
// returns the bundle-relative path ("evidence/<id>/<name>") to pass as an
// outcome's evidence ref. Names are sanitised and made unique (name, name-2,
// …) so nothing is overwritten. Text is passed through the bundle's Redactor.
type Evidence struct {
	root   string // bundle dir
	id     rubric.ID
	redact *Redactor
	mu     *sync.Mutex
	used   map[string]bool
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func sanitizeName(name string) string {
	name = unsafeName.ReplaceAllString(name, "_")
	name = strings.Trim(name, "._")
	if name == "" {
		name = "evidence"
	}
	return name
}

// reserve picks a unique file name and returns (relative ref, absolute path).
func (e *Evidence) reserve(name string) (string, string, error) {
	name = sanitizeName(name)
	dir := filepath.Join(e.root, EvidenceDir, string(e.id))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("report: evidence dir: %w", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	cand := name
	for i := 2; ; i++ {
		key := string(e.id) + "/" + cand
		if _, err := os.Lstat(filepath.Join(dir, cand)); !e.used[key] && os.IsNotExist(err) {
			e.used[key] = true
			break
		}
		cand = fmt.Sprintf("%s-%d%s", stem, i, ext)
	}
	return path.Join(EvidenceDir, string(e.id), cand), filepath.Join(dir, cand), nil
}

// WriteText writes text (redacted) and returns its ref.
func (e *Evidence) WriteText(name, text string) (string, error) {
	ref, abs, err := e.reserve(name)
	if err != nil {
		return "", err
	}
	if err := WriteFileAtomic(abs, []byte(e.redact.Redact(text))); err != nil {
		return "", fmt.Errorf("report: write evidence %s: %w", ref, err)
	}
	return ref, nil
}

// WriteJSON writes v as indented JSON (redacted).
func (e *Evidence) WriteJSON(name string, v any) (string, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "", fmt.Errorf("report: evidence %s: %w", name, err)
	}
	return e.WriteText(name, string(b)+"\n")
}

// WriteExchanges writes HTTP request/response transcripts (request lines,
// status lines, selected headers, bodies) as produced by harness/osb.
func (e *Evidence) WriteExchanges(name string, xs ...osb.Exchange) (string, error) {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(x.String())
	}
	return e.WriteText(name, b.String())
}

// Command is one command's record as evidence.
type Command struct {
	Label      string `json:"label,omitempty"` // e.g. "probe denied host"
	SandboxID  string `json:"sandbox_id,omitempty"`
	Command    string `json:"command"`
	ExitCode   *int   `json:"exit_code"` // nil: did not finish
	DurationMs int64  `json:"duration_ms"`
	Stdout     string `json:"stdout"`
	Stderr     string `json:"stderr"`
	Truncated  bool   `json:"truncated,omitempty"`
	Error      string `json:"error,omitempty"`
}

// WriteCommand writes a command with its exit code and outputs as text.
func (e *Evidence) WriteCommand(name string, c Command) (string, error) {
	var b strings.Builder
	if c.Label != "" {
		fmt.Fprintf(&b, "# %s\n", c.Label)
	}
	if c.SandboxID != "" {
		fmt.Fprintf(&b, "sandbox: %s\n", c.SandboxID)
	}
	fmt.Fprintf(&b, "$ %s\n", c.Command)
	if c.ExitCode != nil {
		fmt.Fprintf(&b, "exit_code: %d\n", *c.ExitCode)
	} else {
		b.WriteString("exit_code: none (did not finish)\n")
	}
	fmt.Fprintf(&b, "duration_ms: %d\n", c.DurationMs)
	if c.Truncated {
		b.WriteString("truncated: true\n")
	}
	if c.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", c.Error)
	}
	fmt.Fprintf(&b, "--- stdout\n%s\n--- stderr\n%s\n", strings.TrimRight(c.Stdout, "\n"), strings.TrimRight(c.Stderr, "\n"))
	return e.WriteText(name, b.String())
}

// FileHash is a file's identity as evidence.
type FileHash struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	Lines  int64  `json:"lines,omitempty"`
}

// HashFile streams a file (large inputs are never held whole) and returns
// its size, sha256 and newline count.
func HashFile(p string) (FileHash, error) {
	f, err := os.Open(p)
	if err != nil {
		return FileHash{}, err
	}
	defer f.Close()
	h := sha256.New()
	lc := &lineCounter{}
	n, err := io.Copy(io.MultiWriter(h, lc), f)
	if err != nil {
		return FileHash{}, err
	}
	return FileHash{Name: filepath.Base(p), Size: n, SHA256: hex.EncodeToString(h.Sum(nil)), Lines: lc.n}, nil
}

// HashBytes is HashFile for bytes already in memory.
func HashBytes(name string, b []byte) FileHash {
	sum := sha256.Sum256(b)
	lc := &lineCounter{}
	_, _ = lc.Write(b)
	return FileHash{Name: name, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:]), Lines: lc.n}
}

type lineCounter struct{ n int64 }

func (l *lineCounter) Write(p []byte) (int, error) {
	for _, c := range p {
		if c == '\n' {
			l.n++
		}
	}
	return len(p), nil
}

// WriteHashes writes file hashes as "sha256  size  lines  name" lines.
func (e *Evidence) WriteHashes(name string, hs ...FileHash) (string, error) {
	var b strings.Builder
	b.WriteString("# sha256  bytes  lines  name\n")
	for _, h := range hs {
		fmt.Fprintf(&b, "%s  %d  %d  %s\n", h.SHA256, h.Size, h.Lines, h.Name)
	}
	return e.WriteText(name, b.String())
}

// CopyFile copies a host file (e.g. a downloaded chart.png) into the
// evidence directory byte for byte (no redaction: use for artifacts only).
func (e *Evidence) CopyFile(name, src string) (string, error) {
	ref, abs, err := e.reserve(name)
	if err != nil {
		return "", err
	}
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.OpenFile(abs, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return "", err
	}
	if err := out.Close(); err != nil {
		return "", err
	}
	return ref, nil
}
