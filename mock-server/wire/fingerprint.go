package wire

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// Fingerprint names a secret without revealing it: the first 12 hex digits of
// sha256(s). The audit stores it instead of API keys and env values.
func Fingerprint(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:12]
}

// RedactBody is a lifecycle request body as the audit records it: every env
// value replaced by "sha256:<Fingerprint>", image auth by "redacted", other
// JSON kept as sent. A body that is not a JSON object is recorded as a
// placeholder with its size and fingerprint (it may hold anything).
func RedactBody(b []byte) json.RawMessage {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil || m == nil {
		out, _ := json.Marshal(map[string]any{"_unparsed_bytes": len(b), "_sha256": Fingerprint(string(b))})
		return out
	}
	if env, ok := m["env"].(map[string]any); ok {
		for k, v := range env {
			if v != nil {
				env[k] = "sha256:" + Fingerprint(fmt.Sprint(v))
			}
		}
	}
	if img, ok := m["image"].(map[string]any); ok {
		if _, ok := img["auth"]; ok {
			img["auth"] = "redacted"
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return out
}
