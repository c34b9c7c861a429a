package agent

import (
	"net/http"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// writeError writes execd's {"code","message"} error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]string{"code": code, "message": message})
}

// execdJSON is how execd (a gin server) writes JSON: gin's c.JSON Content-Type,
// json.Marshal's bytes with no newline after them.
var execdJSON = wire.JSONReply{
	ContentType:  "application/json; charset=utf-8",
	EncodeFailed: `{"code":"UNKNOWN","message":"encode response"}`,
}

func writeJSON(w http.ResponseWriter, status int, v any) { execdJSON.Write(w, status, v) }
