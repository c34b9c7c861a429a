package steps

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// M0: the raw-HTTP contract, request by request, with the record the course asks for.

func registerContractSteps(sc *godog.ScenarioContext) {
	sc.Step(`^I create a sandbox over raw HTTP$`, createRaw)
	sc.Step(`^the response status is (\d+)$`, responseStatusIs)
	sc.Step(`^the create response carries an id, a state and a createdAt$`, createCarriesFields)
	sc.Step(`^I resolve the sandbox's endpoint for port (\d+)$`, resolveEndpoint)
	sc.Step(`^the endpoint carries no scheme$`, endpointNoScheme)
	sc.Step(`^execd answers "/ping" on that endpoint$`, execdPings)
	sc.Step(`^I send the same create request without the API key$`, createWithoutKey)
	sc.Step(`^the error code is "([^"]*)"$`, errorCodeIs)
	sc.Step(`^I delete the sandbox$`, deleteSandbox)
	sc.Step(`^I get the sandbox$`, getSandbox)
	sc.Step(`^the request lines, status codes and key fields are recorded as evidence$`, contractRecorded)
}

// baseCreateRequest is the smallest create request the contract needs, labelled
// with the run so leftovers can be found.
func (e *Env) baseCreateRequest(purpose string) osb.CreateSandboxRequest {
	timeout := 300
	return osb.CreateSandboxRequest{
		Image:          &osb.ImageSpec{URI: "python:3.12"},
		Entrypoint:     []string{"tail", "-f", "/dev/null"},
		Timeout:        &timeout,
		ResourceLimits: map[string]string{"cpu": "1", "memory": "1Gi"},
		Metadata:       map[string]string{"capstone-run": e.opt.RunID, "capstone-purpose": purpose},
	}
}

// recordExchange keeps the request line, status line and the key fields of one
// exchange for the scenario's evidence.
func (s *scenario) recordExchange(what string, m osb.Meta, keyFields string) {
	line := fmt.Sprintf("%s\n  > %s\n  < %s\n  request-id: %s", what, m.RequestLine, m.StatusLine, m.RequestID())
	if keyFields != "" {
		line += "\n  " + keyFields
	}
	s.mu.Lock()
	s.exchanges = append(s.exchanges, line)
	s.last = lastResponse{what: what, status: m.Status, body: m.Body}
	s.mu.Unlock()
}

func createRaw(ctx context.Context) error {
	s := state(ctx)
	c, cancel := ctxTimeout(ctx, 90*time.Second)
	defer cancel()
	req := s.env.baseCreateRequest("m0-contract")
	res, err := s.env.client.CreateSandbox(c, req)
	if err != nil {
		return failf("create: %v", err)
	}
	body, _ := json.Marshal(req)
	s.createBody = map[string]any{}
	_ = json.Unmarshal(body, &s.createBody)
	fields := ""
	if res.Decoded {
		s.sandboxID = res.Value.ID
		fields = fmt.Sprintf("id=%s state=%s createdAt=%s", res.Value.ID, res.Value.Status.State, res.Value.CreatedAt)
		id := res.Value.ID
		s.deferCleanup(func(ctx context.Context) { s.env.bestEffortDelete(ctx, id) })
	}
	s.recordExchange("create", res.Meta, fields)
	return nil
}

func responseStatusIs(ctx context.Context, want int) error {
	s := state(ctx)
	if s.last.status != want {
		return failf("%s answered %d, want %d (body: %s)", s.last.what, s.last.status, want, excerpt(s.last.body, 300))
	}
	return nil
}

func createCarriesFields(ctx context.Context) error {
	s := state(ctx)
	var sb osb.Sandbox
	if err := json.Unmarshal(s.last.body, &sb); err != nil {
		return failf("create body is not a Sandbox: %v", err)
	}
	var missing []string
	if sb.ID == "" {
		missing = append(missing, "id")
	}
	if sb.Status.State == "" {
		missing = append(missing, "status.state")
	}
	if sb.CreatedAt == "" {
		missing = append(missing, "createdAt")
	}
	if len(missing) > 0 {
		return failf("create response lacks %s", strings.Join(missing, ", "))
	}
	if _, err := time.Parse(time.RFC3339Nano, sb.CreatedAt); err != nil {
		return failf("createdAt %q is not RFC 3339: %v", sb.CreatedAt, err)
	}
	return nil
}

func resolveEndpoint(ctx context.Context, port int) error {
	s := state(ctx)
	if s.sandboxID == "" {
		return failf("no sandbox was created")
	}
	c, cancel := ctxTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.env.client.GetEndpoint(c, s.sandboxID, port, false)
	if err != nil {
		return failf("endpoint: %v", err)
	}
	fields := ""
	if res.Decoded {
		s.execdBase = res.Value.Endpoint
		s.execdHeader = res.Value.Headers
		fields = "endpoint=" + res.Value.Endpoint
	}
	s.recordExchange(fmt.Sprintf("resolve endpoint %d", port), res.Meta, fields)
	return nil
}

func endpointNoScheme(ctx context.Context) error {
	s := state(ctx)
	if s.execdBase == "" {
		return failf("no endpoint was resolved")
	}
	if strings.Contains(s.execdBase, "://") {
		return failf("endpoint %q carries a scheme; SDKs would build http://http://… (CONTRACT §7.4)", s.execdBase)
	}
	return nil
}

func execdPings(ctx context.Context) error {
	s := state(ctx)
	ex, err := s.env.client.ExecdAt(s.execdBase, s.execdHeader)
	if err != nil {
		return failf("execd endpoint %q: %v", s.execdBase, err)
	}
	// Create is asynchronous for clients (course: 202 "possibly Pending"): poll /ping as the SDKs do.
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		c, cancel := ctxTimeout(ctx, 5*time.Second)
		res, err := ex.Ping(c)
		cancel()
		if err == nil && res.OK() {
			s.recordExchange("execd ping", res.Meta, "")
			return nil
		}
		if err != nil {
			last = err.Error()
		} else {
			last = res.StatusLine
		}
		time.Sleep(200 * time.Millisecond)
	}
	return failf("execd /ping never answered 2xx within 30 s (last: %s)", last)
}

func createWithoutKey(ctx context.Context) error {
	s := state(ctx)
	body, _ := json.Marshal(s.createBody)
	c, cancel := ctxTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.env.client.Do(c, osb.RawRequest{Method: "POST", Path: "/v1/sandboxes", Body: body, NoAPIKey: true})
	if err != nil {
		return failf("create without key: %v", err)
	}
	fields := ""
	if ae := res.APIError(); ae != nil {
		fields = "code=" + ae.Code
	}
	s.recordExchange("create without API key", res.Meta, fields)
	if res.OK() {
		// A sandbox was created without a key: clean it up, the step after this fails.
		var sb osb.Sandbox
		if json.Unmarshal(res.Body, &sb) == nil && sb.ID != "" {
			s.deferCleanup(func(ctx context.Context) { s.env.bestEffortDelete(ctx, sb.ID) })
		}
	}
	return nil
}

func errorCodeIs(ctx context.Context, code string) error {
	s := state(ctx)
	ae := osb.ParseAPIError(s.last.status, "application/json", s.last.body)
	if ae == nil || ae.Code != code {
		got := "none"
		if ae != nil {
			got = ae.Code
		}
		return failf("%s: error code %s, want %s (body: %s)", s.last.what, got, code, excerpt(s.last.body, 300))
	}
	return nil
}

func deleteSandbox(ctx context.Context) error {
	s := state(ctx)
	c, cancel := ctxTimeout(ctx, 60*time.Second)
	defer cancel()
	res, err := s.env.client.DeleteSandbox(c, s.sandboxID)
	if err != nil {
		return failf("delete: %v", err)
	}
	s.recordExchange("delete", res.Meta, "")
	return nil
}

func getSandbox(ctx context.Context) error {
	s := state(ctx)
	c, cancel := ctxTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := s.env.client.GetSandbox(c, s.sandboxID)
	if err != nil {
		return failf("get: %v", err)
	}
	fields := ""
	if ae := res.APIError(); ae != nil {
		fields = "code=" + ae.Code
	}
	s.recordExchange("get after delete", res.Meta, fields)
	return nil
}

func contractRecorded(ctx context.Context) error {
	s := state(ctx)
	s.mu.Lock()
	text := strings.Join(s.exchanges, "\n\n") + "\n"
	n := len(s.exchanges)
	s.mu.Unlock()
	if n < 4 {
		return failf("only %d exchanges recorded; the course needs create, resolve, delete and the 401", n)
	}
	p := s.env.writeEvidence("M0", "contract-requests.txt", []byte(text))
	if p == "" {
		return failf("could not write the evidence file")
	}
	s.addEvidence(p)
	return nil
}

// bestEffortDelete removes a sandbox the harness created, whatever state the scenario is in.
func (e *Env) bestEffortDelete(ctx context.Context, id string) {
	c, cancel := ctxTimeout(ctx, 30*time.Second)
	defer cancel()
	_, _ = e.client.DeleteSandbox(c, id)
}

func excerpt(b []byte, n int) string {
	s := string(b)
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
