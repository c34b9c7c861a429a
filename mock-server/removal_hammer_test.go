package mockserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/audit"
	"github.com/osb-capstone/acceptance/mock-server/runtime"
	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// quiescingRuntime is the fake runtime whose sandboxes stop their execd when
// the removal's final record quiesces them, as the namespace runtime does
// (its processes, execd included, are stopped before the final scan). That
// is what opened the 502 window of issue 27: the execd endpoint still served
// calls while the execd behind it was already gone.
type quiescingRuntime struct{ *fakeRuntime }

func (q quiescingRuntime) Create(ctx context.Context, spec runtime.Spec) (runtime.Sandbox, error) {
	sb, err := q.fakeRuntime.Create(ctx, spec)
	if err != nil {
		return nil, err
	}
	return quiescingSandbox{sb.(*fakeSandbox)}, nil
}

type quiescingSandbox struct{ *fakeSandbox }

// Quiesce kills the fake execd (refused dials, cut connections) and leaves
// the removal a moment in which calls could meet it dead.
func (q quiescingSandbox) Quiesce(time.Duration) error {
	q.srv.CloseClientConnections()
	_ = q.srv.Listener.Close()
	time.Sleep(15 * time.Millisecond)
	return nil
}

// hammerAnswer is one call's outcome as its client saw it.
type hammerAnswer struct {
	route   string // lifecycle | proxy | direct
	what    string
	started time.Time
	status  int
	body    string
	err     error // transport error (no status), or the body's read error after a status
}

// TestRemovalNeverAnswers5xx deletes, admin-expires and TTL-expires
// sandboxes while clients call their lifecycle routes, the server proxy
// route (execd and files through it) and the execd endpoint directly.
// No answer is ever 5xx; once the removal has returned, the lifecycle and
// proxy routes answer 404 DOCKER::SANDBOX_NOT_FOUND and the execd endpoint
// refuses (a connection error), exactly as for an unknown sandbox.
func TestRemovalNeverAnswers5xx(t *testing.T) {
	fr := &fakeRuntime{t: t}
	env := newEnv(t, func(c *Config) { c.Runtime = quiescingRuntime{fr} })
	h := hammerServer{srv: env.srv, now: env.clock.Now,
		create: func() (string, string) {
			id := env.create(func(b map[string]any) { b["timeout"] = 60 })
			return id, env.execdAddr(id)
		},
		expireAll: func() { env.clock.Advance(time.Hour) }, // every timer due: each sandbox expires as its TTL would
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, mode := range []string{"delete", "admin-expire", "ttl"} {
		t.Run(mode, func(t *testing.T) { hammerRound(t, h, client, mode) })
	}
}

// TestRemovalNeverAnswers5xxRealRuntime is the hammer on the real Linux
// runtime, whose removal stops the sandbox's processes (execd included)
// before it is destroyed, as in issue 27. TTL expiry is the fake clock's
// (TestRemovalNeverAnswers5xx): it takes the same path as the admin expiry.
func TestRemovalNeverAnswers5xxRealRuntime(t *testing.T) {
	srv, _ := realEnv(t) // skipped under -short
	h := hammerServer{srv: srv, now: time.Now,
		create: func() (string, string) {
			id, base := createSandbox(t, srv, validCreate())
			return id, strings.TrimSuffix(strings.TrimPrefix(base, "http://"), "/proxy/44772")
		},
	}
	client := &http.Client{Timeout: 30 * time.Second}
	for _, mode := range []string{"delete", "admin-expire"} {
		t.Run(mode, func(t *testing.T) { hammerRound(t, h, client, mode) })
	}
}

// hammerServer is the server under the hammer and how to make and expire
// its sandboxes.
type hammerServer struct {
	srv       *Server
	now       func() time.Time // the server's clock (renewals)
	create    func() (id, execdAddr string)
	expireAll func() // TTL-expires every sandbox (nil: not available)
}

func hammerRound(t *testing.T, env hammerServer, client *http.Client, mode string) {
	const sandboxes, workers = 3, 5
	type target struct{ id, execd string }
	var targets []target
	for range sandboxes {
		id, execd := env.create()
		targets = append(targets, target{id, execd})
	}
	var (
		mu      sync.Mutex
		answers []hammerAnswer
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	removedAt := map[string]time.Time{} // when the removal call returned
	for _, tg := range targets {
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
				for !stop.Load() {
					as := hammerCall(client, env, tg.id, tg.execd, rnd.IntN(13), mode)
					mu.Lock()
					answers = append(answers, as...)
					mu.Unlock()
				}
			}()
		}
	}
	// The removal comes while the clients are calling: once each sandbox has
	// answered a few calls, after a random moment more.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		mu.Lock()
		n := len(answers)
		mu.Unlock()
		if n >= sandboxes*workers {
			break
		}
	}
	time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
	switch mode {
	case "ttl":
		env.expireAll()
		now := time.Now()
		for _, tg := range targets {
			removedAt[tg.id] = now
		}
	default:
		var rwg sync.WaitGroup
		var rmu sync.Mutex
		for _, tg := range targets {
			rwg.Add(1)
			go func() {
				defer rwg.Done()
				started := time.Now()
				path := "/v1/sandboxes/" + tg.id
				req, _ := http.NewRequest(http.MethodDelete, env.srv.URL()+path, nil)
				req.Header.Set(headerAPIKey, testKey)
				if mode == "admin-expire" {
					req, _ = http.NewRequest(http.MethodPost, env.srv.URL()+"/_mock/sandboxes/"+tg.id+"/expire", nil)
					req.Header.Set(headerAdminToken, testAdmin)
				}
				res, err := client.Do(req)
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				rmu.Lock()
				defer rmu.Unlock()
				if err != nil || res.StatusCode != http.StatusNoContent {
					t.Errorf("%s %s: %v %v", mode, tg.id, err, res)
				}
				removedAt[tg.id] = time.Now()
				t.Logf("%s %s took %s", mode, tg.id, removedAt[tg.id].Sub(started).Round(time.Millisecond))
			}()
		}
		rwg.Wait()
	}
	// The clients go on calling the gone sandboxes: until each has answered
	// a few calls made after its removal (however loaded the machine).
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		after := map[string]int{}
		mu.Lock()
		for _, a := range answers {
			for _, tg := range targets {
				if (strings.Contains(a.what, tg.id) || strings.Contains(a.what, tg.execd)) && a.started.After(removedAt[tg.id]) {
					after[tg.id]++
				}
			}
		}
		mu.Unlock()
		enough := true
		for _, tg := range targets {
			enough = enough && after[tg.id] >= 2*workers
		}
		if enough {
			break
		}
	}
	stop.Store(true)
	wg.Wait()

	calls, after := 0, 0
	for _, a := range answers {
		calls++
		id := ""
		for _, tg := range targets {
			if strings.Contains(a.what, tg.id) || strings.Contains(a.what, tg.execd) {
				id = tg.id
			}
		}
		gone := a.started.After(removedAt[id])
		if gone {
			after++
		}
		switch {
		case a.status >= 500:
			t.Errorf("%s: %d %s (a 5xx)", a.what, a.status, a.body)
		case a.route != "direct" && a.status == 0:
			t.Errorf("%s: no answer: %v (the lifecycle server always answers; the call started %s before the removal returned)",
				a.what, a.err, removedAt[id].Sub(a.started).Round(time.Millisecond))
		case a.route == "list":
			if gone && strings.Contains(a.body, id) {
				t.Errorf("%s after the removal returned lists the removed sandbox: %s", a.what, a.body)
			}
		case gone && a.route == "direct" && a.err == nil:
			t.Errorf("%s after the removal returned: %d %s, want a refused connection", a.what, a.status, a.body)
		case gone && a.route != "direct" && (a.status != http.StatusNotFound || !strings.Contains(a.body, `"DOCKER::SANDBOX_NOT_FOUND"`)):
			t.Errorf("%s after the removal returned: %d %s, want 404 DOCKER::SANDBOX_NOT_FOUND", a.what, a.status, a.body)
		}
	}
	if after == 0 || calls == after {
		t.Fatalf("the hammer must call both before and after the removal: %d calls, %d after", calls, after)
	}
}

// hammerCall makes call number n of the mix on sandbox id (execd: its direct
// endpoint's address). A pause that took is followed at once by its resume:
// a paused sandbox's execd is frozen (on the real runtime, as with docker
// pause), so calls to it wait for the thaw, and a pause left standing would
// leave every worker waiting on it until the client gives up.
func hammerCall(client *http.Client, env hammerServer, id, execd string, n int, mode string) []hammerAnswer {
	a := hammerCallOne(client, env, id, execd, n, mode)
	if n == 3 && a.status == http.StatusAccepted {
		return []hammerAnswer{a, hammerCallOne(client, env, id, execd, 4, mode)}
	}
	return []hammerAnswer{a}
}

func hammerCallOne(client *http.Client, env hammerServer, id, execd string, n int, mode string) hammerAnswer {
	base := env.srv.URL()
	var (
		route, method, url, ctype string
		body                      []byte
	)
	switch n {
	case 0:
		route, method, url = "lifecycle", "GET", base+"/v1/sandboxes/"+id
	case 1:
		route, method, url = "lifecycle", "GET", base+"/v1/sandboxes/"+id+"/endpoints/44772"
	case 2:
		route, method, url = "lifecycle", "PATCH", base+"/v1/sandboxes/"+id+"/metadata"
		body, ctype = []byte(`{"hammer":"x"}`), "application/json"
	case 3:
		route, method, url = "lifecycle", "POST", base+"/v1/sandboxes/"+id+"/pause"
	case 4:
		route, method, url = "lifecycle", "POST", base+"/v1/sandboxes/"+id+"/resume"
	case 5:
		route, method, url = "lifecycle", "POST", base+"/v1/sandboxes/"+id+"/renew-expiration"
		if mode == "ttl" { // a renewal would outlast the hour the clock is advanced by
			route, method, url = "lifecycle", "GET", base+"/v1/sandboxes/"+id+"/diagnostics/logs?scope=container"
			break
		}
		body, _ = json.Marshal(map[string]string{"expiresAt": env.now().Add(2 * time.Minute).Format(time.RFC3339)})
		ctype = "application/json"
	case 6:
		route, method, url = "proxy", "GET", base+"/sandboxes/"+id+"/proxy/44772/ping"
	case 7:
		route, method, url = "proxy", "POST", base+"/sandboxes/"+id+"/proxy/44772/command"
		body, ctype = []byte(`{"command":"echo hi"}`), "application/json"
	case 8:
		route, method, url = "proxy", "GET", base+"/sandboxes/"+id+"/proxy/44772/files/download?path=/workspace/a"
	case 9:
		route, method, url = "direct", "POST", "http://"+execd+"/proxy/44772/command"
		body, ctype = []byte(`{"command":"echo hi"}`), "application/json"
	case 10:
		route, method, url = "direct", "POST", "http://"+execd+"/files/upload"
		body, ctype = uploadBody("/workspace/a", "data")
	case 11:
		route, method, url = "direct", "GET", "http://"+execd+"/files/download?path=/workspace/a"
	default:
		route, method, url = "list", "GET", base+"/v1/sandboxes?pageSize=200#"+id
	}
	a := hammerAnswer{route: route, what: method + " " + url, started: time.Now()}
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		a.err = err
		return a
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	req.Header.Set(headerAPIKey, testKey)
	res, err := client.Do(req)
	if err != nil {
		a.err = err
		return a
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	a.status, a.body, a.err = res.StatusCode, string(b), err
	return a
}

func uploadBody(path, content string) ([]byte, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	meta, _ := mw.CreateFormField("metadata")
	_, _ = fmt.Fprintf(meta, `{"path":%q}`, path)
	f, _ := mw.CreateFormFile("file", "a")
	_, _ = io.WriteString(f, content)
	_ = mw.Close()
	return buf.Bytes(), mw.FormDataContentType()
}

// A client that hangs up before any answer is recorded with 499, never with
// a 502 the server did not send (D2 judges the 5xx a subject saw).
func TestHangUpIsNotRecordedAs502(t *testing.T) {
	env := newEnv(t)
	id := env.create(nil)
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+env.execdAddr(id)+"/files/upload", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "multipart/form-data; boundary=XYZ")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	_, _ = io.WriteString(pw, "--XYZ\r\nContent-Disposition: form-data; name=\"metadata\"\r\n\r\n{\"path\":\"/workspace/x\"}\r\n")
	cancel() // the client goes away, its upload unfinished
	// The body ends in an error, never in EOF: an EOF would hand the
	// transport a whole (if truncated) body, it would send the last chunk
	// and execd would answer it (not a hang-up). Nor may the body stay
	// open until Do returns: Do waits for the transport's writer, which
	// may already be reading this pipe again (it flushed the part above
	// before the cancel closed the connection), so that wait never ended
	// (a 10-minute hang under -race at load 35). With the error, the
	// writer stops without the last chunk, whichever comes first.
	pw.CloseWithError(errors.New("the client went away"))
	<-done
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, ev := range env.srv.AuditQuery(audit.Query{SandboxID: id, Kind: wire.KindFile}) {
			if ev.File.Op == "upload" {
				if ev.File.Status != statusClientClosed {
					t.Fatalf("a hung-up upload recorded with %d, want %d", ev.File.Status, statusClientClosed)
				}
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the hung-up upload was never recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
