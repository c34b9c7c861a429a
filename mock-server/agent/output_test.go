package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// testAgent serves an agent rooted at a temporary directory (insecure layout:
// client paths live under the root, commands run on the host).
func testAgent(t testing.TB) (*Agent, *httptest.Server, string) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "workspace"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := New(agentCfg(root), nil)
	srv := httptest.NewUnstartedServer(a.Handler())
	srv.Listener = smallBufListener{srv.Listener}
	srv.Start()
	t.Cleanup(srv.Close)
	return a, srv, root
}

type streamResult struct {
	id       string
	stdout   []string
	stderr   []string
	terminal string // execution_complete | error
	evalue   string
	types    []string
}

// slowReader hands the body out in small pieces with a pause between them,
// so the command finishes long before its output has been read.
type slowReader struct {
	r     *bufio.Reader
	pause time.Duration
	n     int
}

func (s *slowReader) Read(p []byte) (int, error) {
	if len(p) > 2048 {
		p = p[:2048]
	}
	s.n++
	if s.pause > 0 && s.n%2 == 0 {
		time.Sleep(s.pause)
	}
	return s.r.Read(p)
}

// runStream posts a command and reads the whole SSE stream; pause > 0 reads it slowly.
func runStream(t testing.TB, base string, body map[string]any, pause time.Duration) streamResult {
	t.Helper()
	b, _ := json.Marshal(body)
	client := http.DefaultClient
	if pause > 0 {
		// A small receive buffer: the sender blocks as soon as the client stops reading.
		d := &net.Dialer{}
		client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, n, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, n, addr)
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(32 << 10)
			}
			return c, err
		}}}
	}
	res, err := client.Post(base+"/command", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	return readStreamFrom(t, &slowReader{r: bufio.NewReaderSize(res.Body, 2048), pause: pause})
}

// readStream reads an SSE command stream to its end.
func readStream(t testing.TB, res *http.Response) streamResult {
	t.Helper()
	defer res.Body.Close()
	return readStreamFrom(t, res.Body)
}

func readStreamFrom(t testing.TB, r io.Reader) streamResult {
	t.Helper()
	var out streamResult
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("bad frame %q: %v", line, err)
		}
		out.types = append(out.types, ev.Type)
		switch ev.Type {
		case "init":
			out.id = ev.Text
		case "stdout":
			out.stdout = append(out.stdout, ev.Text)
		case "stderr":
			out.stderr = append(out.stderr, ev.Text)
		case "execution_complete":
			out.terminal = ev.Type
		case "error":
			out.terminal = ev.Type
			out.evalue = ev.Error.Evalue
		}
	}
	return out
}

// seqMissing reports the first deviation of lines from 1..n.
func seqMissing(lines []string, n int) string {
	for i := 0; i < n; i++ {
		if i >= len(lines) {
			return "got " + strconv.Itoa(len(lines)) + " of " + strconv.Itoa(n) + " lines"
		}
		if lines[i] != strconv.Itoa(i+1) {
			return "line " + strconv.Itoa(i+1) + " is " + strconv.Quote(lines[i])
		}
	}
	if len(lines) != n {
		return "got " + strconv.Itoa(len(lines)) + " lines, want " + strconv.Itoa(n)
	}
	return ""
}

// TestOutputCompleteWithSlowReader: the command exits while most of its output
// still sits in the pipe (the client reads slowly); every line must still be
// delivered, in order, before the terminal event.
func TestOutputCompleteWithSlowReader(t *testing.T) {
	_, srv, _ := testAgent(t)
	res := runStream(t, srv.URL, map[string]any{"command": "seq 1 30000"}, time.Millisecond)
	if msg := seqMissing(res.stdout, 30000); msg != "" {
		t.Fatalf("seq 1 30000 through a slow reader: %s", msg)
	}
	if res.terminal != "execution_complete" {
		t.Fatalf("terminal %q", res.terminal)
	}
}

// TestOutputBackgroundGrandchildDoesNotHang: a grandchild that keeps the
// pipes open must not hold the stream past the drain cap; what the command
// itself wrote is delivered.
func TestOutputBackgroundGrandchildDoesNotHang(t *testing.T) {
	_, srv, _ := testAgent(t)
	start := time.Now()
	res := runStream(t, srv.URL, map[string]any{"command": "sleep 3 & seq 1 2000; echo done"}, 0)
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("stream took %v with a background grandchild holding the pipe", el)
	}
	if msg := seqMissing(res.stdout[:min(len(res.stdout), 2000)], 2000); msg != "" || len(res.stdout) != 2001 || res.stdout[2000] != "done" {
		t.Fatalf("output %d lines: %s", len(res.stdout), msg)
	}
}

// smallBufListener fixes each connection's send buffer (no autotuning), so a
// slow client makes the agent's writes block, as a slow network does.
type smallBufListener struct{ net.Listener }

func (l smallBufListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(32 << 10)
	}
	return c, err
}
