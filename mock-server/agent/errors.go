package agent

import (
	"encoding/json"
	"net/http"
)

// writeError writes execd's {"code","message"} error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]string{"code": code, "message": message})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"code":"UNKNOWN","message":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8") // as gin's c.JSON
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
