package mockserver

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
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
		n, err1 := url.QueryUnescape(name)
		val, err2 := url.QueryUnescape(value)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("bad query field: %q", field)
		}
		out = append(out, [2]string{n, val})
	}
	return out, nil
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
	q := r.URL.Query()
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

	s.mu.Lock()
	live := make([]*sandbox, 0, len(s.sandboxes))
	for _, sb := range s.sandboxes {
		live = append(live, sb)
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
