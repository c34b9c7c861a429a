package mockserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// orderWriter notes whether the audit record already happened when the
// client-visible parts of a response go out.
type orderWriter struct {
	*httptest.ResponseRecorder
	recorded     *bool
	atHeader     bool
	atLastByte   bool
	bytesWritten int
	total        int
}

func (o *orderWriter) WriteHeader(code int) {
	o.atHeader = *o.recorded
	o.ResponseRecorder.WriteHeader(code)
}

func (o *orderWriter) Write(b []byte) (int, error) {
	o.bytesWritten += len(b)
	if o.bytesWritten >= o.total {
		o.atLastByte = *o.recorded
	}
	return o.ResponseRecorder.Write(b)
}

// The exchange is recorded before the client can act on it: before the
// status line when the record needs no body, before the last byte of a
// Content-Length body when it does (a download's hash).
func TestTapWriterRecordsBeforeTheClientSeesTheEnd(t *testing.T) {
	send := func(status int, body []byte, recordsBody func(int) bool) *orderWriter {
		recorded := false
		ow := &orderWriter{ResponseRecorder: httptest.NewRecorder(), recorded: &recorded, total: len(body)}
		var seen int
		tap := &tapWriter{ResponseWriter: ow, recordsBody: recordsBody,
			onData: func(b []byte) { seen += len(b) }}
		tap.final = func() {
			recorded = true
			if recordsBody != nil && recordsBody(status) {
				assert.Equal(t, len(body), seen, "the record sees the whole body")
			}
		}
		tap.Header().Set("Content-Length", itoa(len(body)))
		tap.WriteHeader(status)
		for i := 0; i < len(body); i += 4 {
			_, _ = tap.Write(body[i:min(i+4, len(body))])
		}
		tap.finish()
		assert.True(t, recorded)
		return ow
	}
	download := func(s int) bool { return s == http.StatusOK }

	ow := send(http.StatusNotFound, []byte(`{"code":"FILE_NOT_FOUND"}`), download)
	assert.True(t, ow.atHeader, "a 404 is recorded before its status line")

	ow = send(http.StatusOK, []byte("0123456789abcdef!"), download)
	assert.False(t, ow.atHeader, "a download's hash needs its body")
	assert.True(t, ow.atLastByte, "…and is recorded before the last byte")

	ow = send(http.StatusOK, nil, nil)
	assert.True(t, ow.atHeader, "an empty response is recorded before its status line")
}
