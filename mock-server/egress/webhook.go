package egress

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"
)

// denyWebhookPayload is the real sidecar's deny webhook body (CONTRACT §3.4,
// eg/pkg/events/webhook.go): timestamp is RFC 3339 UTC.
type denyWebhookPayload struct {
	Hostname  string `json:"hostname"`
	Timestamp string `json:"timestamp"`
	Source    string `json:"source"`
	SandboxID string `json:"sandboxId"`
}

// notifyDenied posts a denial to the configured webhook in the background
// (up to 3 attempts on transport errors and 5xx). Hub.Close waits for it.
func (h *Hub) notifyDenied(sandboxID, host string) {
	if h.webhook == nil {
		return
	}
	body, err := json.Marshal(denyWebhookPayload{
		Hostname:  host,
		Timestamp: time.Now().UTC().Format(time.RFC3339),
		Source:    "opensandbox-egress",
		SandboxID: sandboxID,
	})
	if err != nil {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		for attempt := 0; attempt < 3; attempt++ {
			if attempt > 0 {
				time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.DenyWebhook, bytes.NewReader(body))
			if err != nil {
				cancel()
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := h.webhook.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
				_ = resp.Body.Close()
				cancel()
				if resp.StatusCode < 500 {
					return
				}
				continue
			}
			cancel()
		}
	}()
}
