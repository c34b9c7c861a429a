package reference

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// A small client for the OpenAI-compatible chat-completions API, the
// endpoint the harness gives an agent as OPENAI_BASE_URL / OPENAI_API_KEY.
// It is a client like any student's: it knows the wire format, never the
// harness's scripted server.

type chatMsg struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chatTool struct {
	Type     string         `json:"type"`
	Function map[string]any `json:"function"`
}

type chatResponse struct {
	Choices []struct {
		Message      chatMsg `json:"message"`
		FinishReason string  `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

// modelError is a classified failure of the model endpoint.
type modelError struct {
	Status     int           // HTTP status; 0 = no answer
	RetryAfter time.Duration // from Retry-After, if any
	Timeout    bool          // no (complete) answer within the call's timeout
	Msg        string
}

func (e *modelError) Error() string { return e.Msg }

// modelClient calls one endpoint with one key; every call is bounded.
type modelClient struct {
	baseURL, apiKey, model string
	timeout                time.Duration
	http                   *http.Client
}

func newStr(s string) *string { return &s }

// complete sends one chat-completion request (non-streaming).
func (c *modelClient) complete(ctx context.Context, msgs []chatMsg, tools []chatTool) (*chatResponse, error) {
	body, err := json.Marshal(map[string]any{"model": c.model, "messages": msgs, "tools": tools, "tool_choice": "auto"})
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, strings.TrimSuffix(c.baseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, &modelError{Msg: "bad OPENAI_BASE_URL: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	res, err := c.http.Do(req)
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, &modelError{Timeout: true, Msg: fmt.Sprintf("the model gave no answer within %s", c.timeout)}
		}
		return nil, &modelError{Msg: "cannot reach the model endpoint: " + err.Error()}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, &modelError{Status: res.StatusCode, Timeout: true, Msg: fmt.Sprintf("the model's answer stalled (no complete answer within %s)", c.timeout)}
		}
		return nil, &modelError{Status: res.StatusCode, Msg: "reading the model's answer: " + err.Error()}
	}
	if res.StatusCode != http.StatusOK {
		me := &modelError{Status: res.StatusCode, Msg: fmt.Sprintf("the model endpoint answered %d: %s", res.StatusCode, apiMessage(b))}
		me.RetryAfter, _ = retryAfter(res.Header.Get("Retry-After"))
		return nil, me
	}
	var cr chatResponse
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Choices) == 0 {
		return nil, &modelError{Status: res.StatusCode, Msg: fmt.Sprintf("the model's answer is not a chat completion: %.200s", b)}
	}
	return &cr, nil
}

// apiMessage is error.message of an OpenAI-style error body, else the body.
func apiMessage(b []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
