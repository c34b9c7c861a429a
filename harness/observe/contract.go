package observe

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
)

// perAnswerHeaders are response headers that say nothing about the
// contract: hop-by-hop ones and those every answer varies.
var perAnswerHeaders = map[string]bool{
	"Date": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true, "Keep-Alive": true,
	"X-Request-Id": true, "Etag": true, "Last-Modified": true,
}

// headerNames is the sorted set of an answer's header names, without the
// per-answer ones.
func headerNames(h http.Header) []string {
	var out []string
	for k := range h {
		if !perAnswerHeaders[http.CanonicalHeaderKey(k)] {
			out = append(out, http.CanonicalHeaderKey(k))
		}
	}
	sort.Strings(out)
	return out
}

// answerContract reads a lifecycle answer's body head: the sandbox state it
// gives (status.state), its JSON shape and, for a 4xx or 5xx, its error
// code. A body that is not JSON (or was cut at maxBody) has the shape
// "text" ("" when empty).
func answerContract(status int, head []byte) (state, shape, code string) {
	if len(head) == 0 {
		return "", "", ""
	}
	var v any
	if json.Unmarshal(head, &v) != nil {
		return "", "text", ""
	}
	shape = Shape(v)
	if m, ok := v.(map[string]any); ok {
		if st, ok := m["status"].(map[string]any); ok {
			state, _ = st["state"].(string)
		}
		if status >= 400 {
			code, _ = m["code"].(string)
		}
	}
	return state, shape, code
}

// Shape is a JSON value's shape: objects as {key:shape,…} in key order,
// arrays by the union of their elements' shapes, scalars by type; no value
// is kept. Map-like objects (metadata, env) are shapes of their values
// only, since their keys are the caller's.
func Shape(v any) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",")
			}
			switch k {
			case "metadata", "env", "labels", "annotations":
				b.WriteString(k + ":map")
				continue
			}
			b.WriteString(k + ":" + Shape(x[k]))
		}
		b.WriteString("}")
		return b.String()
	case []any:
		seen := map[string]bool{}
		var parts []string
		for _, e := range x {
			s := Shape(e)
			if !seen[s] {
				seen[s] = true
				parts = append(parts, s)
			}
		}
		sort.Strings(parts)
		return "[" + strings.Join(parts, "|") + "]"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case nil:
		return "null"
	}
	return "?"
}
