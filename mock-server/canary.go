package mockserver

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/osb-capstone/acceptance/mock-server/audit"
)

const (
	canaryMaxFile  = 16 << 20  // bytes read per file
	canaryMaxTotal = 256 << 20 // bytes read per scan
)

// SetCanaries replaces the planted canary values (label → value).
func (s *Server) SetCanaries(c map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.canaries = make(map[string]string, len(c))
	for k, v := range c {
		s.canaries[k] = v
	}
}

// CanaryScan looks for every canary value in the sandbox: the environment and
// command lines of its processes, files under workspace and tmp (bounded),
// recorded command output and recorded command lines. Findings name the
// canary's label, never its value; each is also recorded as a KindCanary event.
func (s *Server) CanaryScan(id string) ([]audit.Canary, error) {
	sb := s.lookup(id)
	if sb == nil {
		return nil, ErrNotFound
	}
	return s.scanCanaries(id, sb), nil
}

// scanCanaries is CanaryScan for a sandbox the caller holds (also one that is
// being removed and is no longer in the table).
func (s *Server) scanCanaries(id string, sb *sandbox) []audit.Canary {
	s.mu.Lock()
	canaries := make(map[string][]byte, len(s.canaries))
	for k, v := range s.canaries {
		canaries[k] = []byte(v)
	}
	s.mu.Unlock()
	findings := []audit.Canary{}
	if len(canaries) == 0 {
		return findings
	}
	labels := make([]string, 0, len(canaries))
	for l := range canaries {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	seen := map[audit.Canary]bool{}
	// Each canary is also looked for in common encodings (base64, base64url,
	// hex), reported with the encoding in Where.
	type variant struct {
		label, enc string
		value      []byte
	}
	var variants []variant
	for _, l := range labels {
		v := canaries[l]
		variants = append(variants, variant{l, "", v},
			variant{l, " (base64)", []byte(base64.StdEncoding.EncodeToString(v))},
			variant{l, " (base64url)", []byte(base64.RawURLEncoding.EncodeToString(v))},
			variant{l, " (hex)", []byte(hex.EncodeToString(v))})
	}
	// scrub keeps canary values out of the Where text (paths, command ids).
	scrub := func(where string) string {
		for _, l := range labels {
			where = strings.ReplaceAll(where, string(canaries[l]), "[canary:"+l+"]")
		}
		return where
	}
	check := func(data []byte, location, where string) {
		for _, v := range variants {
			if bytes.Contains(data, v.value) {
				f := audit.Canary{Label: v.label, Location: location, Where: scrub(where) + v.enc}
				if !seen[f] {
					seen[f] = true
					findings = append(findings, f)
				}
			}
		}
	}

	for _, pid := range sb.rt.Pids() {
		if env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ")); err == nil {
			for _, kv := range bytes.Split(env, []byte{0}) {
				name, _, _ := bytes.Cut(kv, []byte("="))
				check(kv, "env", fmt.Sprintf("pid %d: %s", pid, name))
			}
		}
		if cl, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline")); err == nil {
			check(cl, "command", fmt.Sprintf("pid %d cmdline", pid))
		}
	}

	budget := int64(canaryMaxTotal)
	for _, sub := range []string{"workspace", "tmp"} {
		root := filepath.Join(sb.rt.Dir(), sub)
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || budget <= 0 {
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			f, err := os.Open(path)
			if err != nil {
				return nil
			}
			defer f.Close()
			data, _ := io.ReadAll(io.LimitReader(f, min(canaryMaxFile, budget)))
			budget -= int64(len(data))
			rel, _ := filepath.Rel(root, path)
			check(data, "file", "/"+sub+"/"+filepath.ToSlash(rel))
			return nil
		})
	}

	for _, e := range sb.output.Entries() {
		check([]byte(e.Text), "output", e.CommandID+" "+e.Stream)
	}
	for _, ev := range s.audit.Events(audit.Query{SandboxID: id, Kind: audit.KindCommand}) {
		check([]byte(ev.Command.Command), "command", ev.Command.ID)
	}
	for i := range findings {
		f := findings[i]
		s.audit.Record(audit.Event{SandboxID: id, Kind: audit.KindCanary, Canary: &f})
	}
	return findings
}

// maxManifestEntries bounds the final workspace manifest recorded at removal.
const maxManifestEntries = 500

// finalRecord is taken just before a sandbox is destroyed, while its
// processes and files still exist: a canary scan (when canaries are planted),
// recorded as findings plus one Canary event with Location "scan" saying the
// scan happened; and the manifest of /workspace and /tmp as File events with
// Op "final-manifest" (path, size, sha256), so a grader can prove what was, or
// was not, left in the sandbox after the subject's last command.
func (s *Server) finalRecord(id string, sb *sandbox) {
	s.finishBackground(id, sb)
	s.mu.Lock()
	planted := len(s.canaries)
	s.mu.Unlock()
	if planted > 0 {
		n := len(s.scanCanaries(id, sb))
		s.audit.Record(audit.Event{SandboxID: id, Kind: audit.KindCanary, Canary: &audit.Canary{
			Location: "scan", Where: fmt.Sprintf("%d canaries, %d findings, before removal", planted, n)}})
	}
	entries := 0
	for _, sub := range []string{"workspace", "tmp"} {
		root := filepath.Join(sb.rt.Dir(), sub)
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if entries >= maxManifestEntries {
				return fs.SkipAll
			}
			entries++
			rel, _ := filepath.Rel(root, path)
			f := audit.File{Op: "final-manifest", Path: "/" + sub + "/" + filepath.ToSlash(rel)}
			if info, err := d.Info(); err == nil {
				f.Size = info.Size()
			}
			if d.Type().IsRegular() {
				f.SHA256 = fileSHA256(path, canaryMaxFile)
			}
			s.audit.Record(audit.Event{SandboxID: id, Kind: audit.KindFile, File: &f})
			return nil
		})
	}
	if entries >= maxManifestEntries {
		s.audit.Record(audit.Event{SandboxID: id, Kind: audit.KindFile, File: &audit.File{Op: "final-manifest",
			Path: fmt.Sprintf("(manifest cut at %d entries)", maxManifestEntries)}})
	}
}

// fileSHA256 hashes up to limit bytes of a file ("" when unreadable).
func fileSHA256(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, limit)); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}
