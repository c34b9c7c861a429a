package reference

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// The M0 contract check (`acceptance reference contract --out DIR`): five raw
// HTTP exchanges with the lifecycle API, each recorded as sent and as
// answered in DIR/contract.json (the format the grader reads, PLAN/README):
//
//	create            POST   /v1/sandboxes                    202 {id, status.state, createdAt}
//	endpoint          GET    /v1/sandboxes/ID/endpoints/44772 200 {endpoint}
//	unauthorized      POST   /v1/sandboxes (no API key)       401 {code}
//	delete            DELETE /v1/sandboxes/ID                 204
//	get_after_delete  GET    /v1/sandboxes/ID                 404
//
// The sandbox is labelled capstone-run-id=$CAPSTONE_RUN_ID and is deleted on
// every path (a failed step, a signal), so the check leaves nothing behind.

// ContractExchange is one recorded exchange of contract.json.
type ContractExchange struct {
	Step   string            `json:"step"`
	Method string            `json:"method"`
	Path   string            `json:"path"`
	Status int               `json:"status"`
	Fields map[string]string `json:"fields"`
	// Expected is the status the contract requires (not part of the grader's
	// format; there for a person reading the file).
	Expected int    `json:"expected"`
	Error    string `json:"error,omitempty"`
}

// ContractRecord is contract.json.
type ContractRecord struct {
	Exchanges []ContractExchange `json:"exchanges"`
}

// contractSteps are the steps in order with the status each must answer.
var contractSteps = []struct {
	step   string
	status int
}{
	{"create", 202}, {"endpoint", 200}, {"unauthorized", 401}, {"delete", 204}, {"get_after_delete", 404},
}

// ContractMain runs the contract check. Exit 0: every step answered as the
// contract says; 1: some step did not (contract.json says which); 2: usage.
func ContractMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("acceptance reference contract", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory for contract.json (required)")
	domain := fs.String("domain", os.Getenv("OPEN_SANDBOX_DOMAIN"), "lifecycle server host:port (default $OPEN_SANDBOX_DOMAIN)")
	apiKey := fs.String("api-key", os.Getenv("OPEN_SANDBOX_API_KEY"), "API key (default $OPEN_SANDBOX_API_KEY)")
	image := fs.String("image", "python:3.12", "sandbox image")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *out == "" || *domain == "" || *apiKey == "" {
		fmt.Fprintln(stderr, "acceptance reference contract: --out, a domain ($OPEN_SANDBOX_DOMAIN) and an API key ($OPEN_SANDBOX_API_KEY) are required")
		return 2
	}
	cl, err := osb.New(*domain, *apiKey)
	if err != nil {
		fmt.Fprintf(stderr, "acceptance reference contract: %v\n", err)
		return 2
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintf(stderr, "acceptance reference contract: %v\n", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := RunContract(ctx, cl, *image, os.Getenv("CAPSTONE_RUN_ID"))
	if err := writeJSON(filepath.Join(*out, "contract.json"), rec); err != nil {
		fmt.Fprintf(stderr, "acceptance reference contract: %v\n", err)
		return 1
	}
	ok := len(rec.Exchanges) == len(contractSteps)
	for _, ex := range rec.Exchanges {
		verdict := "ok"
		if ex.Status != ex.Expected {
			verdict, ok = "WRONG", false
		}
		fmt.Fprintf(stdout, "%-17s %-6s %-40s %d (want %d) %s %s\n", ex.Step, ex.Method, ex.Path, ex.Status, ex.Expected, verdict, ex.Error)
	}
	if !ok {
		fmt.Fprintf(stdout, "contract check: FAILED (%d of %d steps recorded)\n", len(rec.Exchanges), len(contractSteps))
		return 1
	}
	fmt.Fprintln(stdout, "contract check: every step answered as the contract says")
	return 0
}

// RunContract performs the five exchanges and returns what was sent and seen.
// It stops at the first step that cannot go on (no sandbox id), and always
// deletes the sandbox it created.
func RunContract(ctx context.Context, cl *osb.Client, image, runID string) ContractRecord {
	var rec ContractRecord
	add := func(step string, want int, res *osb.Result[[]byte], err error, fields map[string]string) {
		ex := ContractExchange{Step: step, Expected: want, Fields: fields}
		if res != nil {
			ex.Method, ex.Path = splitRequestLine(res.RequestLine)
			ex.Status = res.Status
		}
		if err != nil {
			ex.Error = err.Error()
		}
		if ex.Fields == nil {
			ex.Fields = map[string]string{}
		}
		rec.Exchanges = append(rec.Exchanges, ex)
	}
	ttl := 300
	body := osb.CreateSandboxRequest{
		Image:          &osb.ImageSpec{URI: image},
		Entrypoint:     []string{"tail", "-f", "/dev/null"},
		Timeout:        &ttl,
		ResourceLimits: map[string]string{"cpu": "1", "memory": "1Gi"}, // required by the contract
		NetworkPolicy:  &osb.NetworkPolicy{DefaultAction: "deny"},
		Metadata:       runLabel("capstone-reference-contract", runID),
	}
	b, _ := json.Marshal(body)

	// 1. create
	res, err := cl.Do(ctx, osb.RawRequest{Method: "POST", Path: "/v1/sandboxes", Body: b})
	var created struct {
		ID     string `json:"id"`
		Status struct {
			State string `json:"state"`
		} `json:"status"`
		CreatedAt string `json:"createdAt"`
	}
	if res != nil && res.OK() {
		_ = json.Unmarshal(res.Body, &created)
	}
	add("create", 202, res, err, map[string]string{"id": created.ID, "status.state": created.Status.State, "createdAt": created.CreatedAt})
	if created.ID == "" {
		return rec
	}
	id := created.ID
	deleted := false
	defer func() {
		if !deleted { // a step failed or the context ended: never leave the sandbox behind
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, _ = cl.Do(dctx, osb.RawRequest{Method: "DELETE", Path: "/v1/sandboxes/" + id})
		}
	}()

	// 2. the execd endpoint (port 44772), as host:port with no scheme
	res, err = cl.Do(ctx, osb.RawRequest{Method: "GET", Path: "/v1/sandboxes/" + id + "/endpoints/" + strconv.Itoa(osb.DefaultExecdPort)})
	var ep osb.Endpoint
	if res != nil && res.OK() {
		_ = json.Unmarshal(res.Body, &ep)
	}
	add("endpoint", 200, res, err, map[string]string{"endpoint": ep.Endpoint})

	// 3. the same create without the API key
	res, err = cl.Do(ctx, osb.RawRequest{Method: "POST", Path: "/v1/sandboxes", Body: b, NoAPIKey: true})
	var apiErr struct {
		Code string `json:"code"`
	}
	if res != nil {
		_ = json.Unmarshal(res.Body, &apiErr)
		if res.OK() { // the server accepted a keyless create: remove what it made
			var stray struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(res.Body, &stray) == nil && stray.ID != "" {
				_, _ = cl.Do(ctx, osb.RawRequest{Method: "DELETE", Path: "/v1/sandboxes/" + stray.ID})
			}
		}
	}
	add("unauthorized", 401, res, err, map[string]string{"code": apiErr.Code})

	// 4. delete
	res, err = cl.Do(ctx, osb.RawRequest{Method: "DELETE", Path: "/v1/sandboxes/" + id})
	deleted = res != nil && res.OK()
	add("delete", 204, res, err, nil)

	// 5. get after delete
	res, err = cl.Do(ctx, osb.RawRequest{Method: "GET", Path: "/v1/sandboxes/" + id})
	add("get_after_delete", 404, res, err, nil)
	return rec
}

// splitRequestLine turns "GET /v1/x?q HTTP/1.1" into ("GET", "/v1/x?q").
func splitRequestLine(line string) (method, path string) {
	parts := strings.Fields(line)
	if len(parts) >= 2 {
		return parts[0], parts[1]
	}
	return "", ""
}

// runLabel is the metadata every sandbox of the reference carries: what made
// it, and the run it belongs to (capstone-run-id), so `reference reap` can
// find the residue of a killed run.
func runLabel(app, runID string) map[string]string {
	m := map[string]string{"app": app}
	if runID != "" {
		m[RunIDLabel] = runID
	}
	return m
}

// RunIDLabel is the metadata key that ties a sandbox to its run
// ($CAPSTONE_RUN_ID), the convention the grader documents for reap scripts.
const RunIDLabel = "capstone-run-id"
