package reference

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/osb-capstone/acceptance/harness/osb"
)

// Evidence is written to {out}/evidence.json: the chain from the numbers in
// report.md back to requests, status codes, file hashes and exit codes.
// Secrets never appear in it (the transcript redacts them; the token is only
// ever sent to the vault).
type Evidence struct {
	Question           string             `json:"question"`
	Server             string             `json:"server,omitempty"`
	Input              *HostInput         `json:"input,omitempty"`
	SandboxID          string             `json:"sandbox_id,omitempty"`
	Policy             *osb.NetworkPolicy `json:"network_policy,omitempty"`
	CredentialProxy    bool               `json:"credential_proxy"`
	Calls              []CallRecord       `json:"calls,omitempty"`
	Uploads            []osb.UploadedFile `json:"uploads,omitempty"`
	Install            []Attempt          `json:"install_attempts,omitempty"`
	Artifacts          []Artifact         `json:"artifacts,omitempty"`
	SandboxInputSHA256 string             `json:"sandbox_input_sha256,omitempty"`
	Host               *HostNumbers       `json:"host_recomputation,omitempty"`
	Verification       []Check            `json:"verification,omitempty"`
	GoneObserved       bool               `json:"sandbox_gone_observed,omitempty"`
	Cleanup            *Cleanup           `json:"cleanup,omitempty"`
	Notes              []string           `json:"notes,omitempty"`
}

// CallRecord is the key facts of one HTTP exchange (the full exchange is in
// evidence/transcript.jsonl).
type CallRecord struct {
	What        string `json:"what"`
	RequestLine string `json:"request_line"`
	Status      int    `json:"status"`
	StatusLine  string `json:"status_line"`
	RequestID   string `json:"request_id,omitempty"`
	DurationMs  int64  `json:"duration_ms"`
}

func record(what string, m osb.Meta) CallRecord {
	return CallRecord{What: what, RequestLine: m.RequestLine, Status: m.Status, StatusLine: m.StatusLine,
		RequestID: m.RequestID(), DurationMs: m.Duration.Milliseconds()}
}

// Attempt is one install attempt and the decision taken after it.
type Attempt struct {
	Step     string `json:"step"`
	Attempt  int    `json:"attempt"`
	Class    string `json:"class,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Decision string `json:"decision"`
}

// Artifact is one downloaded file, hashed while it streamed.
type Artifact struct {
	Remote string `json:"remote"`
	Saved  string `json:"saved,omitempty"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// Cleanup is the proof of destruction.
type Cleanup struct {
	DeleteStatus int    `json:"delete_status"`
	DeleteError  string `json:"delete_error,omitempty"`
	GetStatus    int    `json:"get_status"`
	Confirmed    bool   `json:"confirmed"`
}

// sandboxMetrics is the part of metrics.json the host uses.
type sandboxMetrics struct {
	Metrics     map[string]float64 `json:"metrics"`
	InputSHA256 string             `json:"input_sha256"`
}

func parseMetrics(b []byte) (*sandboxMetrics, error) {
	var m sandboxMetrics
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("not the expected JSON: %w", err)
	}
	if m.Metrics == nil {
		return nil, errors.New(`no "metrics" object`)
	}
	return &m, nil
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

func isPNG(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(pngMagic))
	if _, err := io.ReadFull(f, head); err != nil {
		return false
	}
	return bytes.Equal(head, pngMagic)
}

// limitWriter accepts at most n bytes, then fails (a runaway metrics.json
// must not exhaust host memory).
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, errors.New("file too large")
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
