package dockertarget

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	dc "github.com/ory/dockertest/v3/docker"
)

// Provenance that can be checked (issue 29). An image's labels are what
// anyone who builds it says about it, so no label makes an image official or
// upstream-built:
//
//   - official: the engine holds the image under a repository digest of the
//     registry and repository its name gives (RepoDigests "opensandbox/execd@
//     sha256:…", which only a pull or a push sets), and that digest was
//     recorded for this image id when this harness pulled it: in this run, or
//     in an earlier one (the pull ledger, PullLedger). A later run whose
//     engine image no longer matches the recorded digest and id is not
//     official.
//   - declares upstream commit X (not verified): the image carries the
//     upstream-commit label and is not official.
//   - stand-in: the image carries this project's stand-in label (built here).
//   - from the engine: anything else.
//
// The ledger lives with the engine's run state (stateDir()/pulls.json),
// since it vouches for images in that engine.

// PullRecord is one pull the harness made: the repository digest the
// registry served for a name, and the image id it gave in the engine.
type PullRecord struct {
	Ref      string    `json:"ref"`       // the name pulled (name:tag or name@sha256:…)
	Digest   string    `json:"digest"`    // repository digest, "repo@sha256:…"
	ImageID  string    `json:"image_id"`  // the engine's image id after the pull
	PulledAt time.Time `json:"pulled_at"` // when
}

// PullLedger is the record of pulls, keyed by repository digest.
type PullLedger struct {
	Path string // "" keeps nothing across runs
	mu   sync.Mutex
}

func (l *PullLedger) read() map[string]PullRecord {
	m := map[string]PullRecord{}
	if l == nil || l.Path == "" {
		return m
	}
	if b, err := os.ReadFile(l.Path); err == nil {
		_ = json.Unmarshal(b, &m)
	}
	return m
}

// Lookup returns the recorded pull of a repository digest.
func (l *PullLedger) Lookup(digest string) (PullRecord, bool) {
	if l == nil {
		return PullRecord{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.read()[digest]
	return r, ok
}

// Record keeps a pull (atomically replacing the file).
func (l *PullLedger) Record(r PullRecord) error {
	if l == nil || l.Path == "" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m := l.read()
	m[r.Digest] = r
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(l.Path), 0o755); err != nil {
		return err
	}
	tmp := l.Path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, l.Path)
}

// repository is a reference's repository in the engine's full form
// ("docker.io/opensandbox/execd" for "opensandbox/execd:v1.1.0"; a name
// with a registry host keeps it), without tag or digest.
func repository(ref string) string {
	name := ref
	if i := strings.Index(name, "@"); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndex(name, ":"); i >= 0 && !strings.Contains(name[i:], "/") {
		name = name[:i]
	}
	first, rest, hasSlash := strings.Cut(name, "/")
	switch {
	case !hasSlash:
		return "docker.io/library/" + name
	case strings.ContainsAny(first, ".:") || first == "localhost":
		return name
	default:
		return "docker.io/" + first + "/" + rest
	}
}

// repoDigestFor is the image's repository digest under ref's own registry
// and repository ("" when the engine holds none: the image was built,
// loaded or tagged here, never pulled from there). A ref given by digest
// must match it exactly.
func repoDigestFor(ref string, im *dc.Image) string {
	want := repository(ref)
	_, pinned, byDigest := strings.Cut(ref, "@")
	for _, d := range im.RepoDigests {
		repo, sum, ok := strings.Cut(d, "@")
		if !ok || repository(repo) != want {
			continue
		}
		if byDigest && sum != pinned {
			continue
		}
		return want + "@" + sum
	}
	return ""
}

// OriginDeclares is the label of an image that declares an upstream commit
// it was built from, which nothing here can verify.
func OriginDeclares(commit string) string {
	return OriginDeclaresPrefix + shortCommit(commit) + OriginNotVerified
}

// originOf is an image's provenance (see the package comment above): the
// stand-in label first, then a digest the pull ledger vouches for, then a
// declared upstream commit, else "from the engine". pulledNow records this
// run's pull in the ledger first.
func originOf(ref string, im *dc.Image, pulledNow bool, ledger *PullLedger) (origin, digest string) {
	var labels map[string]string
	if im.Config != nil {
		labels = im.Config.Labels
	}
	digest = repoDigestFor(ref, im)
	if labels[labelStandIn] != "" {
		return OriginStandIn, digest
	}
	if digest != "" {
		if pulledNow {
			_ = ledger.Record(PullRecord{Ref: ref, Digest: digest, ImageID: im.ID, PulledAt: time.Now().UTC()})
			return OriginOfficial, digest
		}
		if rec, ok := ledger.Lookup(digest); ok && rec.ImageID == im.ID {
			return OriginOfficial, digest
		}
	}
	if c := strings.TrimSpace(labels[LabelUpstreamCommit]); c != "" {
		return OriginDeclares(c), digest
	}
	return OriginEngine, digest
}

// describeOrigin is the note the run prints for a non-official image with a
// repository digest: why it is not official.
func describeOrigin(ref, origin, digest string) string {
	if origin == OriginOfficial || digest == "" {
		return ""
	}
	return fmt.Sprintf("%s carries %s, but this harness has no record of pulling it: not official", ref, digest)
}
