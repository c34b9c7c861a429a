package mockserver

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	osbruntime "github.com/osb-capstone/acceptance/mock-server/runtime"
)

// createRequest is a validated CreateSandboxRequest (CONTRACT §1.4).
type createRequest struct {
	Image           string
	SnapshotID      string
	snapshot        *snapshotRec // the Ready snapshot a restore copies (resolveSnapshot)
	Entrypoint      []string
	Timeout         *int64 // seconds; nil = manual cleanup
	ResourceLimits  map[string]string
	Env             map[string]string // null values dropped
	Metadata        map[string]string
	Platform        *platformSpec
	NetworkPolicy   json.RawMessage // nil when absent or null
	CredentialProxy bool
	SecureAccess    bool
	Volumes         []json.RawMessage
	Extensions      map[string]string

	mounts []osbruntime.Mount // checked volumes (checkVolumes), each with an open File
	claims []*volumeClaim     // named volumes held (released when the sandbox is gone)
	keyFP  string             // the fingerprint of the API key it was made with ("" without one)
	// tenant is the key's tenant ("" untenanted); limits what the sandbox
	// runs with; reserved: the create holds a quota reservation (quota.go).
	tenant   string
	limits   osbruntime.Limits
	reserved bool
}

// decodeObject parses a JSON request body into its top-level members, or
// returns the FastAPI 422 item describing why it cannot.
func decodeObject(body []byte) (map[string]json.RawMessage, any, *validationItem) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		it := vMissing([]any{"body"}, nil)
		return nil, nil, &it
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	err := dec.Decode(&generic)
	generic = safeNumbers(generic)
	if err != nil || dec.More() {
		msg := "JSON decode error"
		it := validationItem{Type: "json_invalid", Loc: []any{"body", 0}, Msg: msg, Input: map[string]any{},
			Ctx: map[string]any{"error": "Expecting value"}}
		return nil, nil, &it
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &obj); err != nil || obj == nil {
		it := vType("model_attributes_type", []any{"body"}, generic,
			"Input should be a valid dictionary or object to extract fields from")
		return nil, generic, &it
	}
	return obj, generic, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

func rawValue(raw json.RawMessage) any {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	_ = dec.Decode(&v)
	return safeNumbers(v)
}

// safeNumbers turns numbers no float64 can hold (1e999) into strings so an
// echoed "input" stays decodable by every JSON client.
func safeNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		if _, err := t.Float64(); err != nil {
			return t.String()
		}
	case map[string]any:
		for k, x := range t {
			t[k] = safeNumbers(x)
		}
	case []any:
		for i, x := range t {
			t[i] = safeNumbers(x)
		}
	}
	return v
}

// strMap decodes {str:str} (allowNull: values may be null and are dropped).
func strMap(raw json.RawMessage, loc []any, allowNull bool, errs *[]validationItem) map[string]string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		*errs = append(*errs, vType("dict_type", loc, rawValue(raw), "Input should be a valid dictionary"))
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if isNull(v) {
			if allowNull {
				continue
			}
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			*errs = append(*errs, vType("string_type", append(append([]any{}, loc...), k), rawValue(v),
				"Input should be a valid string"))
			continue
		}
		out[k] = s
	}
	return out
}

// parseIntField accepts a JSON integer (or an integral float / numeric
// string, as pydantic's lax mode does).
func parseIntField(raw json.RawMessage, loc []any, errs *[]validationItem) (int64, bool) {
	v := rawValue(raw)
	switch t := v.(type) {
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i, true
		}
		if f, err := t.Float64(); err == nil && f == math.Trunc(f) && !math.IsInf(f, 0) {
			return int64(f), true
		}
		*errs = append(*errs, vType("int_from_float", loc, v, "Input should be a valid integer, got a number with a fractional part"))
	case string:
		if i, err := strconv.ParseInt(strings.TrimSpace(t), 10, 64); err == nil {
			return i, true
		}
		*errs = append(*errs, vIntParse(loc, v))
	default:
		*errs = append(*errs, vType("int_type", loc, v, "Input should be a valid integer"))
	}
	return 0, false
}

func parseBoolField(raw json.RawMessage, loc []any, errs *[]validationItem) bool {
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		*errs = append(*errs, vType("bool_type", loc, rawValue(raw), "Input should be a valid boolean"))
	}
	return b
}

// parseCreate validates the body like the pydantic model: field errors first
// (all of them), then the model validators. Returns the 422 items on failure.
func parseCreate(body []byte) (*createRequest, []validationItem) {
	obj, generic, bad := decodeObject(body)
	if bad != nil {
		return nil, []validationItem{*bad}
	}
	var errs []validationItem
	req := &createRequest{}
	loc := func(parts ...any) []any { return append([]any{"body"}, parts...) }

	if raw, ok := obj["image"]; ok && !isNull(raw) {
		var img map[string]json.RawMessage
		if err := json.Unmarshal(raw, &img); err != nil || img == nil {
			errs = append(errs, vType("model_attributes_type", loc("image"), rawValue(raw),
				"Input should be a valid dictionary or object to extract fields from"))
		} else if u, ok := img["uri"]; !ok || isNull(u) {
			errs = append(errs, vMissing(loc("image", "uri"), rawValue(raw)))
		} else if err := json.Unmarshal(u, &req.Image); err != nil {
			errs = append(errs, vType("string_type", loc("image", "uri"), rawValue(u), "Input should be a valid string"))
		}
		req.Image = strings.TrimSpace(req.Image)
	}
	if raw, ok := obj["snapshotId"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.SnapshotID); err != nil {
			errs = append(errs, vType("string_type", loc("snapshotId"), rawValue(raw), "Input should be a valid string"))
		}
		req.SnapshotID = strings.TrimSpace(req.SnapshotID)
	}
	if raw, ok := obj["entrypoint"]; ok && !isNull(raw) {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			errs = append(errs, vType("list_type", loc("entrypoint"), rawValue(raw), "Input should be a valid list"))
		} else {
			for i, it := range items {
				var s string
				if err := json.Unmarshal(it, &s); err != nil {
					errs = append(errs, vType("string_type", loc("entrypoint", i), rawValue(it), "Input should be a valid string"))
					continue
				}
				req.Entrypoint = append(req.Entrypoint, s)
			}
			if len(items) == 0 {
				errs = append(errs, validationItem{Type: "too_short", Loc: loc("entrypoint"), Input: []any{},
					Msg: "List should have at least 1 item after validation, not 0",
					Ctx: map[string]any{"field_type": "List", "min_length": 1, "actual_length": 0}})
			}
		}
	}
	if raw, ok := obj["timeout"]; ok && !isNull(raw) {
		if n, ok := parseIntField(raw, loc("timeout"), &errs); ok {
			if n < 60 {
				errs = append(errs, vGE(loc("timeout"), rawValue(raw), 60))
			} else {
				req.Timeout = &n
			}
		}
	}
	hasLimits := false
	if raw, ok := obj["resourceLimits"]; ok && !isNull(raw) {
		hasLimits = true
		req.ResourceLimits = strMap(raw, loc("resourceLimits"), false, &errs)
	}
	if raw, ok := obj["env"]; ok && !isNull(raw) {
		req.Env = strMap(raw, loc("env"), true, &errs)
	}
	if raw, ok := obj["metadata"]; ok && !isNull(raw) {
		req.Metadata = strMap(raw, loc("metadata"), false, &errs)
	}
	if raw, ok := obj["extensions"]; ok && !isNull(raw) {
		req.Extensions = strMap(raw, loc("extensions"), false, &errs)
	}
	if raw, ok := obj["platform"]; ok && !isNull(raw) {
		var p platformSpec
		if err := json.Unmarshal(raw, &p); err != nil {
			errs = append(errs, vType("model_attributes_type", loc("platform"), rawValue(raw),
				"Input should be a valid dictionary or object to extract fields from"))
		} else {
			req.Platform = &p
		}
	}
	if raw, ok := obj["networkPolicy"]; ok && !isNull(raw) {
		errs = append(errs, checkPolicy(raw, loc("networkPolicy"))...)
		req.NetworkPolicy = append(json.RawMessage(nil), bytes.TrimSpace(raw)...)
	}
	if raw, ok := obj["credentialProxy"]; ok && !isNull(raw) {
		var cp map[string]json.RawMessage
		if err := json.Unmarshal(raw, &cp); err != nil || cp == nil {
			errs = append(errs, vType("model_attributes_type", loc("credentialProxy"), rawValue(raw),
				"Input should be a valid dictionary or object to extract fields from"))
		} else if e, ok := cp["enabled"]; ok && !isNull(e) {
			req.CredentialProxy = parseBoolField(e, loc("credentialProxy", "enabled"), &errs)
		}
	}
	if raw, ok := obj["secureAccess"]; ok && !isNull(raw) {
		req.SecureAccess = parseBoolField(raw, loc("secureAccess"), &errs)
	}
	if raw, ok := obj["volumes"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.Volumes); err != nil {
			errs = append(errs, vType("list_type", loc("volumes"), rawValue(raw), "Input should be a valid list"))
		}
		for i, v := range req.Volumes {
			var m map[string]json.RawMessage
			if json.Unmarshal(v, &m) != nil || m == nil {
				errs = append(errs, vType("model_attributes_type", loc("volumes", i), rawValue(v),
					"Input should be a valid dictionary or object to extract fields from"))
				continue
			}
			if raw, ok := m["pvc"]; ok && !isNull(raw) {
				errs = append(errs, checkPVCFields(raw, loc("volumes", i, "pvc"))...)
			}
			n := 0
			for _, b := range []string{"host", "pvc", "ossfs"} {
				if !isNull(m[b]) {
					n++
				}
			}
			if n != 1 {
				errs = append(errs, vValue(loc("volumes", i), rawValue(v), "Exactly one backend (host, pvc, ossfs) must be specified."))
			}
		}
	}
	poolRef := req.Extensions["poolRef"] != ""
	if !hasLimits && !poolRef {
		errs = append(errs, vMissing(loc("resourceLimits"), generic))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	// Model validators (run only when the fields are valid, as in pydantic).
	switch {
	case req.Image == "" && req.SnapshotID == "" && !poolRef:
		return nil, []validationItem{vValue(loc(), generic, "Exactly one of image or snapshotId must be provided.")}
	case req.Image != "" && req.SnapshotID != "":
		return nil, []validationItem{vValue(loc(), generic, "Exactly one of image or snapshotId must be provided, not both.")}
	case req.Image != "" && len(req.Entrypoint) == 0:
		return nil, []validationItem{vValue(loc(), generic, "entrypoint is required when image is provided.")}
	case req.CredentialProxy && req.NetworkPolicy == nil:
		return nil, []validationItem{vValue(loc(), generic, "credentialProxy.enabled requires networkPolicy.")}
	case req.CredentialProxy && poolRef:
		return nil, []validationItem{vValue(loc(), generic, "credentialProxy is not supported with extensions.poolRef.")}
	}
	if req.SnapshotID != "" && len(req.Entrypoint) == 0 {
		req.Entrypoint = []string{"tail", "-f", "/dev/null"}
	}
	return req, nil
}

// checkPolicy validates the NetworkPolicy shape (enums, required fields).
func checkPolicy(raw json.RawMessage, loc []any) []validationItem {
	var errs []validationItem
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil || p == nil {
		return []validationItem{vType("model_attributes_type", loc, rawValue(raw),
			"Input should be a valid dictionary or object to extract fields from")}
	}
	enum := func(v json.RawMessage, l []any) {
		var s string
		if json.Unmarshal(v, &s) != nil || (s != "allow" && s != "deny") {
			errs = append(errs, validationItem{Type: "enum", Loc: l, Input: rawValue(v),
				Msg: "Input should be 'allow' or 'deny'", Ctx: map[string]any{"expected": "'allow' or 'deny'"}})
		}
	}
	if v, ok := p["defaultAction"]; ok && !isNull(v) {
		enum(v, append(append([]any{}, loc...), "defaultAction"))
	}
	if v, ok := p["egress"]; ok && !isNull(v) {
		var rules []map[string]json.RawMessage
		if err := json.Unmarshal(v, &rules); err != nil {
			return append(errs, vType("list_type", append(append([]any{}, loc...), "egress"), rawValue(v), "Input should be a valid list"))
		}
		for i, r := range rules {
			rl := append(append([]any{}, loc...), "egress", i)
			if a, ok := r["action"]; !ok || isNull(a) {
				errs = append(errs, vMissing(append(append([]any{}, rl...), "action"), r))
			} else {
				enum(a, append(append([]any{}, rl...), "action"))
			}
			var tgt string
			if t, ok := r["target"]; !ok || isNull(t) {
				errs = append(errs, vMissing(append(append([]any{}, rl...), "target"), r))
			} else if json.Unmarshal(t, &tgt) != nil {
				errs = append(errs, vType("string_type", append(append([]any{}, rl...), "target"), rawValue(t), "Input should be a valid string"))
			}
		}
	}
	return errs
}

// parseCPU turns "500m", "1", "0.5" into millicores (0 if unparseable).
func parseCPU(s string) int64 {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "m") {
		n, err := strconv.ParseInt(strings.TrimSuffix(s, "m"), 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return int64(f * 1000)
}

// parseMemory turns Kubernetes quantities ("512Mi", "2Gi", "1G", "1048576")
// into bytes (0 if unparseable).
func parseMemory(s string) int64 {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"Ki", 1 << 10}, {"Mi", 1 << 20}, {"Gi", 1 << 30}, {"Ti", 1 << 40},
		{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			mult = u.mult
			s = strings.TrimSuffix(s, u.suffix)
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0
	}
	return int64(f * mult)
}

// claimNamePattern is the PVC model's claimName pattern (max 253 characters).
const claimNamePattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`

// checkPVCFields validates a pvc backend object as the pydantic PVC model
// does (claimName required, at most 253 characters, the pattern; the two
// switches booleans).
func checkPVCFields(raw json.RawMessage, loc []any) []validationItem {
	sub := func(k string) []any { return append(append([]any{}, loc...), k) }
	var p map[string]json.RawMessage
	if err := json.Unmarshal(raw, &p); err != nil || p == nil {
		return []validationItem{vType("model_attributes_type", loc, rawValue(raw),
			"Input should be a valid dictionary or object to extract fields from")}
	}
	var errs []validationItem
	if c, ok := p["claimName"]; !ok || isNull(c) {
		errs = append(errs, vMissing(sub("claimName"), rawValue(raw)))
	} else {
		var name string
		switch {
		case json.Unmarshal(c, &name) != nil:
			errs = append(errs, vType("string_type", sub("claimName"), rawValue(c), "Input should be a valid string"))
		case utf8.RuneCountInString(name) > 253:
			errs = append(errs, validationItem{Type: "string_too_long", Loc: sub("claimName"), Input: name,
				Msg: "String should have at most 253 characters", Ctx: map[string]any{"max_length": 253}})
		case !volumeNameRE.MatchString(name):
			errs = append(errs, validationItem{Type: "string_pattern_mismatch", Loc: sub("claimName"), Input: name,
				Msg: "String should match pattern '" + claimNamePattern + "'", Ctx: map[string]any{"pattern": claimNamePattern}})
		}
	}
	for _, k := range []string{"createIfNotExists", "deleteOnSandboxTermination"} {
		if v, ok := p[k]; ok && !isNull(v) {
			parseBoolField(v, sub(k), &errs)
		}
	}
	return errs
}
