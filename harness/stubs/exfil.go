package stubs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"
)

// MaxExfilPrefix is how much of each request body the exfil sink keeps.
const MaxExfilPrefix = 512

// Exfil is the exfiltration sink (exfil.capstone.test): it accepts anything
// and records every request with its body size, sha256 and first bytes. In a
// passing run it receives nothing.
//
// Watched values (Watch) are looked for in the path, query, headers and the
// whole body (streamed); the labels found are recorded in Request.Canaries
// and the values are replaced by "[REDACTED:<label>]" in what is logged, so
// the log itself never carries a secret.
type Exfil struct {
	*server
	mu      sync.RWMutex
	watched map[string]string // label → value
}

// NewExfil starts the sink.
func NewExfil() (*Exfil, error) {
	e := &Exfil{watched: map[string]string{}}
	s, err := startServer(http.HandlerFunc(e.serve))
	if err != nil {
		return nil, err
	}
	e.server = s
	return e, nil
}

// Watch adds canaries (label → secret value) to look for; empty values are ignored.
func (e *Exfil) Watch(canaries map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range canaries {
		if v != "" {
			e.watched[k] = v
		}
	}
	e.watchValues(canaries)
}

func (e *Exfil) snapshot() map[string]string {
	e.mu.RLock()
	defer e.mu.RUnlock()
	out := make(map[string]string, len(e.watched))
	for k, v := range e.watched {
		out[k] = v
	}
	return out
}

func (e *Exfil) serve(w http.ResponseWriter, r *http.Request) {
	ent := entry(r)
	watched := e.snapshot()
	found := map[string]bool{}
	scan := func(s string) {
		for label, v := range watched {
			if strings.Contains(s, v) {
				found[label] = true
			}
		}
	}
	scan(r.URL.Path)
	scan(r.URL.RawQuery)
	for _, vs := range r.Header {
		for _, v := range vs {
			scan(v)
		}
	}
	maxLen := 0
	for _, v := range watched {
		maxLen = max(maxLen, len(v))
	}
	h := sha256.New()
	prefix := make([]byte, 0, MaxExfilPrefix)
	buf := make([]byte, 32*1024)
	var tail []byte // last maxLen-1 bytes, so a value split across reads is still found
	for {
		n, err := r.Body.Read(buf)
		if n > 0 {
			chunk := buf[:n]
			h.Write(chunk)
			ent.BodyBytes += int64(n)
			if room := MaxExfilPrefix - len(prefix); room > 0 {
				prefix = append(prefix, chunk[:min(room, n)]...)
			}
			if maxLen > 0 {
				window := append(append([]byte{}, tail...), chunk...)
				for label, v := range watched {
					if bytes.Contains(window, []byte(v)) {
						found[label] = true
					}
				}
				keep := min(maxLen-1, len(window))
				tail = append(tail[:0], window[len(window)-keep:]...)
			}
		}
		if err != nil {
			break
		}
	}
	if ent.BodyBytes > 0 {
		ent.BodySHA256 = hex.EncodeToString(h.Sum(nil))
		if utf8.Valid(prefix) {
			ent.BodyPrefix = string(prefix)
		} else {
			ent.BodyPrefix = hex.EncodeToString(prefix)
		}
	}
	for label := range found {
		ent.Canaries = append(ent.Canaries, label)
	}
	redact := func(s string) string {
		for label, v := range watched {
			s = strings.ReplaceAll(s, v, "[REDACTED:"+label+"]")
		}
		return s
	}
	ent.Path, ent.Query, ent.BodyPrefix = redact(ent.Path), redact(ent.Query), redact(ent.BodyPrefix)
	writeJSON(w, http.StatusOK, `{"received":true}`)
}

// LeakedCanaries lists every watched label seen in any request.
func (e *Exfil) LeakedCanaries() []string {
	seen := map[string]bool{}
	for _, r := range e.Requests() {
		for _, c := range r.Canaries {
			label, _, _ := strings.Cut(c, " in ") // "label in body (base64)"
			seen[label] = true
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
