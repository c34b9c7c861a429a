package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Script is a scenario's model behaviour, as data. Request n (counting from
// 1, every POST to chat/completions) is answered by the turn the script
// reaches at n: each turn serves Repeat requests (1 by default; "forever"
// serves every request from then on). After the last turn the server gives
// Finally (a final answer; "The analysis is complete." by default). Beyond
// MaxRequests requests the server refuses with 400 code "turn_limit".
type Script struct {
	Name        string `yaml:"name" json:"name"`
	Description string `yaml:"description" json:"description"`
	// Seed makes ids (chatcmpl-…, call_…) and "created" stamps reproducible.
	Seed int64 `yaml:"seed" json:"seed"`
	// Model is the model id answered (and listed by GET /v1/models).
	Model string `yaml:"model" json:"model"`
	// MaxRequests is the hard cap (default 40): an agent that is still asking
	// after it never stopped by itself.
	MaxRequests int    `yaml:"max_requests" json:"max_requests"`
	Turns       []Turn `yaml:"turns" json:"turns"`
	Finally     string `yaml:"finally" json:"finally"`
}

// Turn is what the model does for one request (or Repeat of them).
// Exactly one of ToolCall, ToolCalls, Answer or Fault is set.
type Turn struct {
	// ToolCall asks the agent to call one of its tools.
	ToolCall *ToolCall `yaml:"tool_call" json:"tool_call"`
	// ToolCalls asks for several calls at once (parallel tool calls).
	ToolCalls []ToolCall `yaml:"tool_calls" json:"tool_calls"`
	// Answer is a final text answer (finish_reason "stop").
	Answer *string `yaml:"answer" json:"answer"`
	// Fault is an HTTP failure or a stall instead of an answer.
	Fault *Fault `yaml:"fault" json:"fault"`
	// Repeat is how many requests this turn serves: a number ≥ 1 or
	// "forever" (every request from here on). Default 1.
	Repeat Repeat `yaml:"repeat" json:"repeat"`
	// Note says what the turn stands for (shown in the dialogue evidence).
	Note string `yaml:"note" json:"note"`
}

// ToolCall is one function call the model asks for. Arguments are any JSON
// object; they are sent as a JSON string, as the API does.
type ToolCall struct {
	Name      string         `yaml:"name" json:"name"`
	Arguments map[string]any `yaml:"arguments" json:"arguments"`
}

// Fault is how a turn fails.
type Fault struct {
	// Status is an HTTP error status (429, 500, 503 …); 0 with Stall.
	Status int `yaml:"status" json:"status"`
	// RetryAfter (seconds) is sent as Retry-After with the status.
	RetryAfter int `yaml:"retry_after" json:"retry_after"`
	// Message is the error body's message.
	Message string `yaml:"message" json:"message"`
	// Stall: answer nothing (a streaming request gets its headers and first
	// chunk, then nothing) until the client gives up or the server's stall
	// limit passes.
	Stall bool `yaml:"stall" json:"stall"`
}

// Repeat is a repeat count; Forever is -1.
type Repeat int

// Forever is the Repeat of a turn that serves every further request.
const Forever Repeat = -1

// UnmarshalYAML accepts a number or "forever".
func (r *Repeat) UnmarshalYAML(n *yaml.Node) error {
	return r.parse(n.Value)
}

// UnmarshalJSON accepts a number or "forever".
func (r *Repeat) UnmarshalJSON(b []byte) error {
	return r.parse(strings.Trim(string(b), `"`))
}

func (r *Repeat) parse(v string) error {
	v = strings.TrimSpace(strings.ToLower(v))
	if v == "forever" {
		*r = Forever
		return nil
	}
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 1 || fmt.Sprint(n) != v {
		return fmt.Errorf("repeat: want a whole number ≥ 1 or \"forever\", got %q", v)
	}
	*r = Repeat(n)
	return nil
}

// Defaults.
const (
	DefaultModel       = "capstone-scripted"
	DefaultMaxRequests = 40
	DefaultFinally     = "The analysis is complete."
)

// ParseScript reads a script in YAML (JSON is YAML too) and validates it.
// Unknown fields are errors, so a typo never silently changes a drill.
func ParseScript(b []byte) (*Script, error) {
	var s Script
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("model script: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks the script and fills defaults.
func (s *Script) Validate() error {
	if s.Model == "" {
		s.Model = DefaultModel
	}
	if s.MaxRequests == 0 {
		s.MaxRequests = DefaultMaxRequests
	}
	if s.Finally == "" {
		s.Finally = DefaultFinally
	}
	if s.MaxRequests < 1 {
		return fmt.Errorf("model script %q: max_requests must be ≥ 1", s.Name)
	}
	if len(s.Turns) == 0 {
		return fmt.Errorf("model script %q: no turns", s.Name)
	}
	for i := range s.Turns {
		t := &s.Turns[i]
		set := 0
		if t.ToolCall != nil {
			if len(t.ToolCalls) > 0 {
				return fmt.Errorf("model script %q: turn %d: tool_call and tool_calls are both set", s.Name, i+1)
			}
			t.ToolCalls = []ToolCall{*t.ToolCall}
			t.ToolCall = nil
		}
		if len(t.ToolCalls) > 0 {
			set++
		}
		if t.Answer != nil {
			set++
		}
		if t.Fault != nil {
			set++
		}
		if set != 1 {
			return fmt.Errorf("model script %q: turn %d: exactly one of tool_call, tool_calls, answer or fault must be set", s.Name, i+1)
		}
		for j, c := range t.ToolCalls {
			if strings.TrimSpace(c.Name) == "" {
				return fmt.Errorf("model script %q: turn %d: tool call %d has no name", s.Name, i+1, j+1)
			}
			if _, err := json.Marshal(c.Arguments); err != nil {
				return fmt.Errorf("model script %q: turn %d: arguments: %v", s.Name, i+1, err)
			}
		}
		if f := t.Fault; f != nil {
			if f.Stall == (f.Status != 0) {
				return fmt.Errorf("model script %q: turn %d: a fault is either a status (400–599) or a stall", s.Name, i+1)
			}
			if !f.Stall && (f.Status < 400 || f.Status > 599) {
				return fmt.Errorf("model script %q: turn %d: fault status %d is not an HTTP error", s.Name, i+1, f.Status)
			}
			if f.RetryAfter < 0 {
				return fmt.Errorf("model script %q: turn %d: retry_after must be ≥ 0", s.Name, i+1)
			}
		}
		if t.Repeat == 0 {
			t.Repeat = 1
		}
		if t.Repeat == Forever && i != len(s.Turns)-1 {
			return fmt.Errorf("model script %q: turn %d repeats forever, so turns after it are unreachable", s.Name, i+1)
		}
	}
	return nil
}

// TurnFor returns the turn that answers request n (1-based) and its index,
// or ok=false when the script is exhausted (Finally answers).
func (s *Script) TurnFor(n int) (t Turn, index int, ok bool) {
	seen := 0
	for i, t := range s.Turns {
		if t.Repeat == Forever {
			return t, i, true
		}
		seen += int(t.Repeat)
		if n <= seen {
			return t, i, true
		}
	}
	return Turn{}, -1, false
}

// Describe is a one-line account of a turn, for evidence.
func (t Turn) Describe() string {
	switch {
	case len(t.ToolCalls) > 0:
		var parts []string
		for _, c := range t.ToolCalls {
			a, _ := json.Marshal(c.Arguments)
			parts = append(parts, c.Name+" "+string(a))
		}
		return "tool call: " + strings.Join(parts, "; ")
	case t.Answer != nil:
		return "answer: " + clip(*t.Answer, 200)
	case t.Fault != nil && t.Fault.Stall:
		return "fault: stalled response"
	case t.Fault != nil:
		s := fmt.Sprintf("fault: HTTP %d", t.Fault.Status)
		if t.Fault.RetryAfter > 0 {
			s += fmt.Sprintf(" with Retry-After %d", t.Fault.RetryAfter)
		}
		return s
	}
	return "(empty turn)"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
