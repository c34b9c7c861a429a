package render

import (
	"encoding/json"
	"io"

	"github.com/osb-capstone/acceptance/harness/report"
)

// WriteJSON renders report.json.
func WriteJSON(w io.Writer, d report.Document) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(d)
}
