package mockserver

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

type pagination struct {
	Page        int  `json:"page"`
	PageSize    int  `json:"pageSize"`
	TotalItems  int  `json:"totalItems"`
	TotalPages  int  `json:"totalPages"`
	HasNextPage bool `json:"hasNextPage"`
}

// parseQSLStrict mirrors urllib.parse.parse_qsl(v, strict_parsing=True):
// '&'-separated name=value pairs, percent- and '+'-decoded; a pair without
// '=' is an error; blank values are dropped.
func parseQSLStrict(v string) ([][2]string, error) {
	var out [][2]string
	if v == "" {
		return out, nil
	}
	for _, field := range strings.Split(v, "&") {
		if field == "" {
			return nil, fmt.Errorf("bad query field: %q", field)
		}
		name, value, ok := strings.Cut(field, "=")
		if !ok {
			return nil, fmt.Errorf("bad query field: %q", field)
		}
		if value == "" {
			continue
		}
		out = append(out, [2]string{pyUnquotePlus(name), pyUnquotePlus(value)})
	}
	return out, nil
}

// pyQuery parses a raw query string as Starlette does for FastAPI's query
// parameters, urllib.parse.parse_qsl(q, keep_blank_values=True): '&'-separated,
// '+' is a space, and a malformed percent escape is kept as it is, never
// dropped. (net/url drops a pair whose escape is malformed, so
// "?metadata=%%%" listed every sandbox where the real server answers 400.)
func pyQuery(raw string) url.Values {
	out := url.Values{}
	for _, field := range strings.Split(raw, "&") {
		if field == "" {
			continue
		}
		name, value, _ := strings.Cut(field, "=")
		k := pyUnquotePlus(name)
		out[k] = append(out[k], pyUnquotePlus(value))
	}
	return out
}

// pyUnquotePlus is urllib.parse.unquote_plus: '+' → ' ', %XX → the byte, a
// malformed escape left as is, the bytes read as UTF-8 with each invalid byte
// replaced by U+FFFD.
func pyUnquotePlus(s string) string {
	s = strings.ReplaceAll(s, "+", " ")
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && ishex(s[i+1]) && ishex(s[i+2]) {
			v, _ := strconv.ParseUint(s[i+1:i+3], 16, 8)
			b = append(b, byte(v))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		sb.WriteRune(r)
		b = b[n:]
	}
	return sb.String()
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// queryInt parses an integer query parameter with bounds (0 = unbounded max),
// returning the FastAPI 422 item on failure.
func queryInt(q url.Values, name string, def, min, max int) (int, *validationItem) {
	raw, ok := q[name]
	if !ok || len(raw) == 0 {
		return def, nil
	}
	v := raw[len(raw)-1]
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		it := vIntParse([]any{"query", name}, v)
		return 0, &it
	}
	if n < min {
		it := vGE([]any{"query", name}, v, min)
		return 0, &it
	}
	if max > 0 && n > max {
		it := vLE([]any{"query", name}, v, max)
		return 0, &it
	}
	return n, nil
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	q := pyQuery(r.URL.RawQuery)
	page, bad := queryInt(q, "page", 1, 1, 0)
	var errs []validationItem
	if bad != nil {
		errs = append(errs, *bad)
	}
	size, bad := queryInt(q, "pageSize", 20, 1, 200)
	if bad != nil {
		errs = append(errs, *bad)
	}
	if len(errs) > 0 {
		writeValidation(w, errs...)
		return
	}
	var meta [][2]string
	if mv, ok := q["metadata"]; ok && len(mv) > 0 {
		var err error
		meta, err = parseQSLStrict(mv[len(mv)-1])
		if err != nil {
			writeError(w, http.StatusBadRequest, "INVALID_METADATA_FORMAT",
				fmt.Sprintf("Invalid metadata format: %v. Expected k=v pairs joined by '&'.", err))
			return
		}
	}
	states := map[string]bool{}
	for _, st := range q["state"] {
		if st = strings.TrimSpace(st); st != "" {
			states[strings.ToLower(st)] = true
		}
	}

	tenant := s.requestTenant(r)
	s.mu.Lock()
	live := make([]*sandbox, 0, len(s.sandboxes))
	for _, sb := range s.sandboxes {
		if tenant == "" || (sb.keyFP != "" && s.tenants[sb.keyFP] == tenant) {
			live = append(live, sb)
		}
	}
	s.mu.Unlock()
	sort.Slice(live, func(i, j int) bool {
		if live[i].createdAt.Equal(live[j].createdAt) {
			return live[i].id > live[j].id
		}
		return live[i].createdAt.After(live[j].createdAt)
	})
	items := make([]sandboxJSON, 0)
	for _, sb := range live {
		v := s.view(sb)
		if s.lookup(sb.id) != sb {
			continue // removed meanwhile: gone, never listed with its dead container's state
		}
		if len(states) > 0 && !states[strings.ToLower(v.Status.State)] {
			continue
		}
		match := true
		for _, kv := range meta {
			if got, ok := v.Metadata[kv[0]]; !ok || got != kv[1] {
				match = false
				break
			}
		}
		if match {
			items = append(items, v)
		}
	}
	total := len(items)
	pages := (total + size - 1) / size
	start := total
	if page-1 <= total/size {
		start = (page - 1) * size
	}
	pageItems := make([]sandboxJSON, 0)
	if start < total {
		end := start + size
		if end > total {
			end = total
		}
		pageItems = items[start:end]
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"items": pageItems,
		"pagination": pagination{Page: page, PageSize: size, TotalItems: total, TotalPages: pages,
			HasNextPage: page < pages},
	})
}
