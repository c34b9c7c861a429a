package wire

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestFindWatchedTransformedData: a marker planted in a CSV is found when the
// whole file leaves re-encoded (base64 and base64url at every offset of the
// marker, hex, URL encoding) or compressed (gzip, zlib), and not in a file
// that does not hold it.
func TestFindWatchedTransformedData(t *testing.T) {
	const marker = "ORD-000107-cm7f3a9c2e41b8d05e"
	watched := map[string]string{"input_run_sales": marker}
	for pad := 0; pad < 3; pad++ {
		csv := []byte("order_id,region,revenue\n" + strings.Repeat("x", pad) + "ORD-000106,North,1.00\n" + marker + ",South,2.50\nORD-000108,East,3.00\n")
		var gz, zl bytes.Buffer
		w := gzip.NewWriter(&gz)
		_, _ = w.Write(csv)
		_ = w.Close()
		z := zlib.NewWriter(&zl)
		_, _ = z.Write(csv)
		_ = z.Close()
		cases := map[string][]byte{
			"":               []byte(`{"data":"` + string(csv) + `"}`),
			" (base64)":      []byte(base64.StdEncoding.EncodeToString(csv)),
			" (base64url)":   []byte(base64.RawURLEncoding.EncodeToString(csv)),
			" (hex)":         []byte(hex.EncodeToString(csv)),
			" (url-encoded)": []byte("data=" + url.QueryEscape(string(csv))),
			"gzip":           gz.Bytes(),
			"zlib":           zl.Bytes(),
		}
		for enc, body := range cases {
			got := FindWatched(watched, []WatchPlace{{Name: "body", Data: body}})
			if assert.Len(t, got, 1, "offset %d, encoding %q", pad, enc) {
				assert.True(t, strings.HasPrefix(got[0], "input_run_sales in body"), got[0])
			}
			switch enc {
			case "gzip", "zlib":
				assert.Equal(t, []string{"input_run_sales in body (" + enc + ")"}, got)
			case " (base64)", " (hex)":
				assert.Equal(t, []string{"input_run_sales in body" + enc}, got)
			}
		}
	}
	other := []byte(base64.StdEncoding.EncodeToString([]byte("order_id,region\nORD-000106,North\nORD-000107,South\n")))
	assert.Empty(t, FindWatched(watched, []WatchPlace{{Name: "body", Data: other}}), "a file without the marker")
	assert.Empty(t, FindWatched(watched, []WatchPlace{{Name: "body", Data: []byte{0x1f, 0x8b, 0, 1, 2}}}), "a broken gzip stream is no finding and no panic")
}
