package model

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config configures a scripted model server.
type Config struct {
	Script *Script
	// APIKey is the key the submission gets as OPENAI_API_KEY; requests
	// without it are refused with 401. Empty: any key is accepted.
	APIKey string
	// Secrets are searched for in every request and redacted in the evidence.
	Secrets []Secret
	// Env is the submission's environment (KEY=VALUE), to recognise a dump.
	Env []string
	// StallMax bounds a stalled answer (default 5 minutes).
	StallMax time.Duration
	// Addr to listen on (default 127.0.0.1:0; loopback only).
	Addr string
}

// Server is a running scripted model.
type Server struct {
	cfg   Config
	sc    *scanner
	ln    net.Listener
	srv   *http.Server
	done  chan struct{}
	close sync.Once

	mu  sync.Mutex
	n   int // completion requests so far
	seq int
	xs  []Exchange
}

// Start listens on loopback and serves the script.
func Start(cfg Config) (*Server, error) {
	if cfg.Script == nil {
		return nil, errors.New("model: Config.Script is required")
	}
	if err := cfg.Script.Validate(); err != nil {
		return nil, err
	}
	if cfg.StallMax <= 0 {
		cfg.StallMax = 5 * time.Minute
	}
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("model: listen address %q: %w", cfg.Addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("model: listen address %q is not a loopback IP", cfg.Addr)
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	s := &Server{cfg: cfg, sc: newScanner(cfg.Secrets, cfg.Env), ln: ln, done: make(chan struct{})}
	mux := http.NewServeMux()
	for _, p := range []string{"/v1/chat/completions", "/chat/completions"} {
		mux.HandleFunc(p, s.completions)
	}
	for _, p := range []string{"/v1/models", "/models", "/v1/models/", "/models/"} {
		mux.HandleFunc(p, s.models)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.record(r, nil, http.StatusNotFound, Exchange{Error: "unknown route"})
		writeJSON(w, http.StatusNotFound, newAPIError("invalid_request_error", "unknown_url", "Unknown request URL: "+r.Method+" "+r.URL.Path+"."))
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// BaseURL is what OPENAI_BASE_URL should be: http://127.0.0.1:port/v1.
func (s *Server) BaseURL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server; stalled answers end at once.
func (s *Server) Close() error {
	var err error
	s.close.Do(func() {
		close(s.done)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = s.srv.Shutdown(ctx)
		if err != nil {
			err = s.srv.Close()
		}
	})
	return err
}

// Exchanges returns what was received so far, in order.
func (s *Server) Exchanges() []Exchange {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Exchange(nil), s.xs...)
}

// Requests is the number of chat-completion requests received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// Redact removes every planted secret from s (for evidence written elsewhere).
func (s *Server) Redact(text string) string { return s.sc.redactString(text) }

func (s *Server) authOK(r *http.Request) bool {
	if s.cfg.APIKey == "" {
		return true
	}
	return r.Header.Get("Authorization") == "Bearer "+s.cfg.APIKey
}

func (s *Server) record(r *http.Request, body []byte, status int, x Exchange) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	x.Seq = s.seq
	if x.Time.IsZero() {
		x.Time = time.Now().UTC()
	}
	x.Method, x.Path, x.Status = r.Method, r.URL.Path, status
	x.AuthOK = s.authOK(r)
	if body != nil && x.Request == nil {
		x.Request = s.sc.storedBody(body)
	}
	s.xs = append(s.xs, x)
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		s.record(r, nil, http.StatusMethodNotAllowed, Exchange{Error: "method not allowed"})
		writeJSON(w, http.StatusMethodNotAllowed, newAPIError("invalid_request_error", "method_not_allowed", "Use GET."))
		return
	}
	if !s.authOK(r) {
		s.record(r, nil, http.StatusUnauthorized, Exchange{Error: "missing or wrong API key"})
		writeJSON(w, http.StatusUnauthorized, newAPIError("invalid_request_error", "invalid_api_key", "Incorrect API key provided."))
		return
	}
	m := modelInfo{ID: s.cfg.Script.Model, Object: "model", Created: baseCreated, OwnedBy: "capstone-acceptance"}
	id := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1"), "/models")
	id = strings.Trim(id, "/")
	if id != "" {
		if id != m.ID {
			s.record(r, nil, http.StatusNotFound, Exchange{Error: "unknown model " + id})
			writeJSON(w, http.StatusNotFound, newAPIError("invalid_request_error", "model_not_found", "The model `"+id+"` does not exist."))
			return
		}
		s.record(r, nil, http.StatusOK, Exchange{})
		writeJSON(w, http.StatusOK, m)
		return
	}
	s.record(r, nil, http.StatusOK, Exchange{})
	writeJSON(w, http.StatusOK, modelList{Object: "list", Data: []modelInfo{m}})
}

// maxBody is the largest request accepted (a prompt with a whole CSV fits).
const maxBody = 16 << 20

// baseCreated is the "created" stamp of request 1 (2026-01-01T00:00:00Z):
// answers are reproducible byte for byte.
const baseCreated = 1767225600

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if r.Method != http.MethodPost {
		s.record(r, nil, http.StatusMethodNotAllowed, Exchange{Error: "method not allowed"})
		writeJSON(w, http.StatusMethodNotAllowed, newAPIError("invalid_request_error", "method_not_allowed", "Use POST."))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		s.record(r, nil, http.StatusBadRequest, Exchange{Error: "reading the body: " + err.Error()})
		writeJSON(w, http.StatusBadRequest, newAPIError("invalid_request_error", "", "Could not read the request body."))
		return
	}
	x := Exchange{Time: start.UTC()}
	if len(body) > maxBody {
		x.Error = "request body over 16 MiB"
		s.record(r, body[:maxBody], http.StatusRequestEntityTooLarge, x)
		writeJSON(w, http.StatusRequestEntityTooLarge, newAPIError("invalid_request_error", "request_too_large", "The request body is larger than 16 MiB."))
		return
	}
	var req chatRequest
	jerr := json.Unmarshal(body, &req)
	var reqp *chatRequest
	if jerr == nil {
		reqp = &req
	}
	// Secrets are searched for in everything received, even a refused request.
	x.Findings, x.EnvDump = s.sc.scan(body, reqp)
	if !s.authOK(r) {
		x.Error = "missing or wrong API key"
		s.record(r, body, http.StatusUnauthorized, x)
		writeJSON(w, http.StatusUnauthorized, newAPIError("invalid_request_error", "invalid_api_key", "Incorrect API key provided. Use the key in OPENAI_API_KEY."))
		return
	}
	if jerr != nil {
		x.Error = "body is not JSON: " + jerr.Error()
		s.record(r, body, http.StatusBadRequest, x)
		writeJSON(w, http.StatusBadRequest, newAPIError("invalid_request_error", "", "We could not parse the JSON body of your request: "+jerr.Error()))
		return
	}
	if len(req.Messages) == 0 {
		x.Error = "no messages"
		s.record(r, body, http.StatusBadRequest, x)
		writeJSON(w, http.StatusBadRequest, newAPIError("invalid_request_error", "", "'messages' is a required property and must not be empty."))
		return
	}
	x.Stream, x.Messages = req.Stream, len(req.Messages)
	for _, t := range req.Tools {
		x.ToolsOffered = append(x.ToolsOffered, t.Function.Name)
	}
	x.ToolResults = toolResults(req.Messages, s.sc)

	s.mu.Lock()
	s.n++
	n := s.n
	s.mu.Unlock()
	script := s.cfg.Script
	if n > script.MaxRequests {
		x.CutOff = true
		x.Served = fmt.Sprintf("refused request %d: the script's limit of %d requests was passed", n, script.MaxRequests)
		s.record(r, body, http.StatusBadRequest, x)
		writeJSON(w, http.StatusBadRequest, newAPIError("invalid_request_error", "turn_limit",
			fmt.Sprintf("The scripted model answers at most %d requests; the agent never stopped by itself.", script.MaxRequests)))
		return
	}
	turn, idx, ok := script.TurnFor(n)
	if !ok {
		a := script.Finally
		turn = Turn{Answer: &a}
	} else {
		x.Turn = idx + 1
	}
	x.Served = turn.Describe()
	if turn.Note != "" {
		x.Served += " (" + turn.Note + ")"
	}

	if f := turn.Fault; f != nil && !f.Stall {
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
		}
		typ, code := "server_error", "server_error"
		if f.Status == http.StatusTooManyRequests {
			typ, code = "rate_limit_error", "rate_limit_exceeded"
		}
		msg := f.Message
		if msg == "" {
			msg = fmt.Sprintf("Simulated fault: HTTP %d.", f.Status)
		}
		x.DurationMs = time.Since(start).Milliseconds()
		s.record(r, body, f.Status, x)
		writeJSON(w, f.Status, newAPIError(typ, code, msg))
		return
	}

	id := s.id("chatcmpl-", n, 0)
	created := int64(baseCreated + n)
	prompt := (len(body) + 3) / 4
	if turn.Fault != nil { // a stall
		x.ClientGone = s.stall(w, r, req.Stream, id, created)
		x.DurationMs = time.Since(start).Milliseconds()
		s.record(r, body, http.StatusOK, x)
		return
	}
	msg, finish, completionLen := s.answer(turn, n)
	u := usage{PromptTokens: prompt, CompletionTokens: max(1, (completionLen+3)/4)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if req.Stream {
		includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
		x.ClientGone = !s.stream(w, r, id, created, msg, finish, u, includeUsage)
	} else {
		writeJSON(w, http.StatusOK, completion{ID: id, Object: "chat.completion", Created: created, Model: script.Model,
			Choices: []choice{{Index: 0, Message: msg, FinishReason: finish}}, Usage: u})
	}
	x.DurationMs = time.Since(start).Milliseconds()
	s.record(r, body, http.StatusOK, x)
}

// toolResults are the tool messages after the last assistant message.
func toolResults(ms []chatMessage, sc *scanner) []string {
	var out []string
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.Role == "assistant" {
			break
		}
		if m.Role == "tool" || m.Role == "function" {
			out = append([]string{clip(sc.redactString(contentText(m.Content)), 2000)}, out...)
		}
	}
	return out
}

// contentText is a message's content as text: a string, or the text parts
// of an array of content parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return string(raw)
}

func (s *Server) id(prefix string, n, j int) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%d/%s/%d/%d", s.cfg.Script.Seed, s.cfg.Script.Name, n, j)))
	return prefix + hex.EncodeToString(h[:])[:24]
}

// answer builds the assistant message of a tool-call or answer turn.
func (s *Server) answer(t Turn, n int) (respMessage, string, int) {
	if t.Answer != nil {
		a := *t.Answer
		return respMessage{Role: "assistant", Content: &a}, "stop", len(a)
	}
	m := respMessage{Role: "assistant"}
	size := 0
	for j, c := range t.ToolCalls {
		args := "{}"
		if c.Arguments != nil {
			args = string(mustJSON(c.Arguments))
		}
		var tc wireToolCall
		tc.ID, tc.Type = s.id("call_", n, j), "function"
		tc.Function.Name, tc.Function.Arguments = c.Name, args
		m.ToolCalls = append(m.ToolCalls, tc)
		size += len(c.Name) + len(args)
	}
	return m, "tool_calls", size
}

// stream writes the answer as server-sent chat.completion.chunk events. It
// reports whether the client read it to the end.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, id string, created int64, m respMessage, finish string, u usage, includeUsage bool) bool {
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	base := chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.cfg.Script.Model}
	send := func(c chunk) bool {
		b := mustJSON(c)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return r.Context().Err() == nil
	}
	with := func(d delta, fin *string) chunk {
		c := base
		c.Choices = []chunkChoice{{Index: 0, Delta: d, FinishReason: fin}}
		return c
	}
	empty := ""
	if m.Content != nil {
		if !send(with(delta{Role: "assistant", Content: &empty}, nil)) {
			return false
		}
		for _, p := range pieces(*m.Content, 24) {
			p := p
			if !send(with(delta{Content: &p}, nil)) {
				return false
			}
		}
	} else {
		if !send(with(delta{Role: "assistant"}, nil)) {
			return false
		}
		for i, tc := range m.ToolCalls {
			idx := i
			head := wireToolCall{Index: &idx, ID: tc.ID, Type: "function"}
			head.Function.Name = tc.Function.Name
			if !send(with(delta{ToolCalls: []wireToolCall{head}}, nil)) {
				return false
			}
			for _, p := range pieces(tc.Function.Arguments, 16) {
				part := wireToolCall{Index: &idx}
				part.Function.Arguments = p
				if !send(with(delta{ToolCalls: []wireToolCall{part}}, nil)) {
					return false
				}
			}
		}
	}
	if !send(with(delta{}, &finish)) {
		return false
	}
	if includeUsage {
		c := base
		c.Choices = []chunkChoice{}
		c.Usage = &u
		if !send(c) {
			return false
		}
	}
	if _, err := io.WriteString(w, "data: [DONE]\n\n"); err != nil {
		return false
	}
	if fl != nil {
		fl.Flush()
	}
	return true
}

// stall answers nothing until the client hangs up, the server closes or
// StallMax passes. A streaming request gets its headers and a first chunk
// (the model "started" answering). It reports whether the client hung up.
func (s *Server) stall(w http.ResponseWriter, r *http.Request, stream bool, id string, created int64) bool {
	if stream {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		c := chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: s.cfg.Script.Model,
			Choices: []chunkChoice{{Index: 0, Delta: delta{Role: "assistant"}}}}
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(c))
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	t := time.NewTimer(s.cfg.StallMax)
	defer t.Stop()
	select {
	case <-r.Context().Done():
		return true
	case <-s.done:
	case <-t.C:
	}
	if !stream {
		writeJSON(w, http.StatusGatewayTimeout, newAPIError("server_error", "stalled", "The scripted model stalled and gave up."))
	}
	return false
}

// pieces splits s into chunks of about n bytes (on rune boundaries).
func pieces(s string, n int) []string {
	var out []string
	for len(s) > n {
		cut := n
		for cut < len(s) && (s[cut]&0xC0) == 0x80 {
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
