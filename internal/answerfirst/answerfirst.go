// Package answerfirst is the test upstream for forwarders: a server that
// starts its answer before it has read the request body, as execd streams a
// command's output as soon as it can, and the client exchange that proves a
// forwarder lets that through. Why a forwarder on Go's HTTP/1 server must
// forward such an exchange in full duplex, and how it does so safely, is in
// internal/fullduplex.
//
// Exchange sends half of Body, waits for Started, sends the rest and reads
// the whole answer, which is Started+Got(Body) when the forwarder is right.
package answerfirst

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Started is the answer's first event, written before the body is read.
const Started = "data: started\n\n"

// Body is the request body Exchange sends, in two halves.
const Body = `{"a":"bcd"}`

// gotFormat is the answer's second event: the body as read, and the read's
// error.
const gotFormat = "data: got %s %v\n\n"

// Got is the event that follows Started once the whole body was read.
func Got(body string) string { return fmt.Sprintf(gotFormat, body, error(nil)) }

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
		_, _ = fmt.Fprintf(w, gotFormat, b, err)
	})
}

// Exchange POSTs path to the forwarder at addr (host:port) with header
// (extra header lines, each ending in "\r\n"): the first half of Body, then,
// once the answer's Started has arrived, the rest. It returns the answer's
// whole body; an error says at which step the exchange failed (within 5 s).
func Exchange(addr, path, header string) (string, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	half := len(Body) / 2
	if _, err := fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", path, header, len(Body), Body[:half]); err != nil {
		return "", err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return "", fmt.Errorf("the answer did not start before the body was whole: %w", err)
	}
	defer res.Body.Close()
	first := make([]byte, len(Started))
	if _, err := io.ReadFull(res.Body, first); err != nil {
		return "", fmt.Errorf("the answer's first event did not arrive before the body was whole: %w", err)
	}
	if _, err := io.WriteString(c, Body[half:]); err != nil {
		return "", err
	}
	rest, err := io.ReadAll(res.Body)
	if err != nil {
		return string(first) + string(rest), fmt.Errorf("the answer was not whole: %w", err)
	}
	return string(first) + string(rest), nil
}
