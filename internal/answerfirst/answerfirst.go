// Package answerfirst is a test upstream for forwarders: a server that starts
// its answer before it has read the request body, as execd streams a
// command's output as soon as it can.
//
// A forwarder written on Go's HTTP/1 server must forward such an exchange in
// full duplex (http.ResponseController.EnableFullDuplex). Otherwise the
// server, on writing the answer's header, reads what is left of the request
// body and closes it: a client that sends the rest only once the answer has
// started hangs, and when the body is whole already, that close races the
// transport still sending the body upstream (its last read checks for bytes
// past Content-Length), which then closes the upstream connection and cuts
// the streaming answer ("use of closed network connection").
//
// The tests that use it send half the body, wait for Started, send the rest
// and expect Got of the whole body.
package answerfirst

import (
	"fmt"
	"io"
	"net/http"
)

// Started is the answer's first event, written before the body is read.
const Started = "data: started\n\n"

// Got is the event that follows Started once the whole body was read.
func Got(body string) string { return fmt.Sprintf("data: got %s <nil>\n\n", body) }

// Handler answers Started at once, then reads the request body and answers
// Got of it (with the read's error, <nil> when the body came whole).
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.EnableFullDuplex()
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, Started)
		_ = rc.Flush()
		b, err := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "data: got %s %v\n\n", b, err)
	})
}
