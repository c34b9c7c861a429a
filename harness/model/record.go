package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/inert"
)

// Secret is a value that must never reach the model (an API key, the data
// API token, a vault value …). Values shorter than 8 bytes are ignored.
type Secret struct {
	Label string `json:"label"`
	Value string `json:"-"`
}

// Finding is a planted secret seen in a request to the model.
type Finding struct {
	Label string `json:"label"`
	// Where in the request: "message 3 (user)", "tools", "request body".
	Where string `json:"where"`
}

// Exchange is one request the model server received and what it answered.
// Request is the body with every secret replaced by [REDACTED:label].
type Exchange struct {
	Seq    int       `json:"seq"`
	Time   time.Time `json:"time"`
	Method string    `json:"method"`
	Path   string    `json:"path"`
	Status int       `json:"status"`
	Stream bool      `json:"stream"`
	// AuthOK: the request carried the key the harness gave the submission.
	AuthOK bool `json:"auth_ok"`
	// Turn is the script turn that answered (1-based; 0 = none: the script
	// was exhausted, the request was refused or it was not a completion).
	Turn   int    `json:"turn"`
	Served string `json:"served"`
	// CutOff: beyond the script's max_requests; refused with turn_limit.
	CutOff       bool     `json:"cut_off,omitempty"`
	Messages     int      `json:"messages"`
	ToolsOffered []string `json:"tools_offered,omitempty"`
	// ToolResults are the tool-role messages since the last assistant
	// message: what the agent reported back about the previous turn.
	ToolResults []string  `json:"tool_results,omitempty"`
	Findings    []Finding `json:"findings,omitempty"`
	// EnvDump lists the subject's environment variables whose name and value
	// both appear in the request; EnvDumpThreshold or more is a full dump.
	EnvDump    []string        `json:"env_dump,omitempty"`
	DurationMs int64           `json:"duration_ms"`
	ClientGone bool            `json:"client_gone,omitempty"` // the client hung up before the answer ended
	Request    json.RawMessage `json:"request,omitempty"`
	Error      string          `json:"error,omitempty"`
}

// EnvDumpThreshold: this many of the subject's environment variables (name
// and value) in one request make it a full environment dump.
const EnvDumpThreshold = 4

// maxStoredBody caps the stored (redacted) request body.
const maxStoredBody = 256 << 10

// scanner finds and redacts planted secrets and environment dumps.
type scanner struct {
	secrets []Secret
	env     [][2]string
}

func newScanner(secrets []Secret, env []string) *scanner {
	sc := &scanner{}
	for _, s := range secrets {
		if len(s.Value) >= 8 {
			sc.secrets = append(sc.secrets, s)
		}
	}
	// Longest first, so a secret containing another is redacted whole.
	sort.SliceStable(sc.secrets, func(i, j int) bool { return len(sc.secrets[i].Value) > len(sc.secrets[j].Value) })
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && k != "" && len(v) >= 4 {
			sc.env = append(sc.env, [2]string{k, v})
		}
	}
	return sc
}

// texts returns the raw body plus every JSON string in it, decoded (so an
// escaped secret is still found).
func texts(body []byte) string {
	var b strings.Builder
	b.Write(body)
	var v any
	if json.Unmarshal(body, &v) == nil {
		walkStrings(v, func(s string) { b.WriteByte('\n'); b.WriteString(s) })
	}
	return b.String()
}

func walkStrings(v any, fn func(string)) {
	switch x := v.(type) {
	case string:
		fn(x)
		// A JSON document inside a string (tool arguments) is searched too.
		var inner any
		if len(x) > 1 && (x[0] == '{' || x[0] == '[') && json.Unmarshal([]byte(x), &inner) == nil {
			walkStrings(inner, fn)
		}
	case []any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	case map[string]any:
		for _, e := range x {
			walkStrings(e, fn)
		}
	}
}

// scan returns the findings (with where each secret is) and the environment
// variables present in body.
func (sc *scanner) scan(body []byte, req *chatRequest) ([]Finding, []string) {
	all := texts(body)
	var out []Finding
	for _, s := range sc.secrets {
		if !strings.Contains(all, s.Value) {
			continue
		}
		where := "request body"
		if req != nil {
			for i, m := range req.Messages {
				if strings.Contains(texts(mustJSON(m)), s.Value) {
					where = fmt.Sprintf("message %d (%s)", i+1, m.Role)
					break
				}
			}
		}
		out = append(out, Finding{Label: s.Label, Where: where})
	}
	var env []string
	for _, kv := range sc.env {
		if strings.Contains(all, kv[0]) && strings.Contains(all, kv[1]) {
			env = append(env, kv[0])
		}
	}
	sort.Strings(env)
	return out, env
}

// redact replaces every secret in b.
func (sc *scanner) redact(b []byte) []byte {
	for _, s := range sc.secrets {
		b = bytes.ReplaceAll(b, []byte(s.Value), []byte("[REDACTED:"+s.Label+"]"))
		// The JSON-escaped form too (a secret with quotes or slashes).
		if esc := mustJSON(s.Value); len(esc) > 2 && !bytes.Equal(esc[1:len(esc)-1], []byte(s.Value)) {
			b = bytes.ReplaceAll(b, esc[1:len(esc)-1], []byte("[REDACTED:"+s.Label+"]"))
		}
	}
	return b
}

func (sc *scanner) redactString(s string) string { return string(sc.redact([]byte(s))) }

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// storedBody is the redacted body, as JSON when it is JSON, clipped.
func (sc *scanner) storedBody(body []byte) json.RawMessage {
	red := sc.redact(body)
	if len(red) > maxStoredBody || !json.Valid(red) {
		s := string(red)
		if len(s) > maxStoredBody {
			s = s[:maxStoredBody] + "…[clipped]"
		}
		return mustJSON(s)
	}
	return json.RawMessage(red)
}

// WriteJSONL writes exchanges, one per line.
func WriteJSONL(w io.Writer, xs []Exchange) error {
	enc := json.NewEncoder(w)
	for _, x := range xs {
		if err := enc.Encode(x); err != nil {
			return err
		}
	}
	return nil
}

// Dialogue renders the exchanges for people: what the model asked at each
// turn and what the agent reported back (the next request's tool results).
func Dialogue(scriptName string, xs []Exchange) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Model dialogue (script %q)\n\n", scriptName)
	if len(xs) == 0 {
		b.WriteString("The submission never called the model.\n")
		return b.String()
	}
	for i, x := range xs {
		// The method, path and what the agent reported are the submission's
		// text: inert Markdown (harness/inert), never a link or HTML.
		fmt.Fprintf(&b, "%d. %s %s → %d", x.Seq, inert.Markdown(x.Method), inert.Markdown(x.Path), x.Status)
		if x.Served != "" {
			fmt.Fprintf(&b, ": the model %s", x.Served)
		}
		b.WriteString("\n")
		for _, f := range x.Findings {
			fmt.Fprintf(&b, "   - **secret in the request**: %s in %s\n", inert.Markdown(f.Label), inert.Markdown(f.Where))
		}
		if len(x.EnvDump) >= EnvDumpThreshold {
			fmt.Fprintf(&b, "   - **environment dump in the request**: %s\n", inert.Markdown(strings.Join(x.EnvDump, ", ")))
		}
		if x.ClientGone {
			fmt.Fprintf(&b, "   - the agent hung up after %d ms\n", x.DurationMs)
		}
		if i+1 < len(xs) {
			for _, r := range xs[i+1].ToolResults {
				fmt.Fprintf(&b, "   - the agent reported back: %s\n", inert.Markdown(tail(oneLine(r), 400)))
			}
		}
	}
	return b.String()
}

// tail keeps the last n bytes (a command's verdict is at the end of its output).
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && (s[cut]&0xC0) == 0x80 {
		cut++
	}
	return "…" + s[cut:]
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
