package egress

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// Every request the gateway forwards to an allowed host is recorded with the
// sandbox that sent it (the attachment's id: identity, never a time window)
// and the watched values it carried: a planted secret or a run's input
// marker leaving by an allowed host (an upload to the package index) is on
// record even though the policy let the connection through.

// watchBodyLimit bounds how much of one request body is searched.
const watchBodyLimit = 8 << 20

// bodyTap counts and hashes a request body as the upstream reads it, keeping
// its first watchBodyLimit bytes for the search.
type bodyTap struct {
	mu    sync.Mutex // the transport may still be reading when the gateway records
	rc    io.ReadCloser
	n     int64
	sum   hash.Hash
	head  bytes.Buffer
	close func() error
}

func newBodyTap(rc io.ReadCloser) *bodyTap {
	return &bodyTap{rc: rc, sum: sha256.New(), close: rc.Close}
}

func (t *bodyTap) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	if n > 0 {
		t.n += int64(n)
		t.sum.Write(p[:n])
		if room := watchBodyLimit - t.head.Len(); room > 0 {
			t.head.Write(p[:min(n, room)])
		}
	}
	return n, err
}

func (t *bodyTap) Close() error { return t.close() }

// seen is what was read so far: its size, sha256 ("" when empty) and head.
func (t *bodyTap) seen() (int64, string, []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		return 0, "", nil
	}
	return t.n, hexSum(t.sum), append([]byte(nil), t.head.Bytes()...)
}

// watchedIn names the watched values found in the request's path and query,
// its headers (as the sandbox sent them, before any vault injection) and
// its body's head: "label in body", "label in headers (base64)", "label in
// body (gzip)", ... (wire.FindWatched: plain, base64 at any alignment, hex,
// URL-encoded, inside a gzip or zlib body).
func watchedIn(watched map[string]string, target string, hdr http.Header, body []byte) []string {
	if len(watched) == 0 {
		return nil
	}
	var hb strings.Builder
	for k, vs := range hdr {
		for _, v := range vs {
			hb.WriteString(k + ": " + v + "\n")
		}
	}
	path := []byte(target)
	if u, err := url.PathUnescape(target); err == nil && u != target {
		path = append(path, append([]byte("\n"), u...)...)
	}
	return wire.FindWatched(watched, []wire.WatchPlace{{Name: "path", Data: path}, {Name: "headers", Data: []byte(hb.String())}, {Name: "body", Data: body}})
}

// authorizationClass is how a request's Authorization header left the sandbox.
func authorizationClass(hdr http.Header) string {
	if hdr.Get("Authorization") == "" {
		return "none"
	}
	return "present"
}

func hexSum(h hash.Hash) string { return hex.EncodeToString(h.Sum(nil)) }
