package stubs

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"unicode/utf8"
)

// MaxExfilPrefix is how much of each request body the exfil sink keeps.
const MaxExfilPrefix = 512

// Exfil is the exfiltration sink (exfil.capstone.test): it accepts anything
// and records every request with its body size, sha256 and first bytes. In a
// passing run it receives nothing.
type Exfil struct{ *server }

// NewExfil starts the sink.
func NewExfil() (*Exfil, error) {
	s, err := startServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e := entry(r)
		h := sha256.New()
		prefix := make([]byte, 0, MaxExfilPrefix)
		buf := make([]byte, 32*1024)
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				h.Write(buf[:n])
				e.BodyBytes += int64(n)
				if room := MaxExfilPrefix - len(prefix); room > 0 {
					prefix = append(prefix, buf[:min(room, n)]...)
				}
			}
			if err != nil {
				break
			}
		}
		if e.BodyBytes > 0 {
			e.BodySHA256 = hex.EncodeToString(h.Sum(nil))
			if utf8.Valid(prefix) {
				e.BodyPrefix = string(prefix)
			} else {
				e.BodyPrefix = hex.EncodeToString(prefix)
			}
		}
		writeJSON(w, http.StatusOK, `{"received":true}`)
	}))
	if err != nil {
		return nil, err
	}
	return &Exfil{s}, nil
}
