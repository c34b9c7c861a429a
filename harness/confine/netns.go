package confine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/osb-capstone/acceptance/internal/fullduplex"
)

// The box's network: a namespace of its own with only lo, in which one
// iptables rule redirects every TCP connection the box's uid makes to the
// grader's forwarder. The forwarder's socket was opened inside that
// namespace; it reads where each connection was going (SO_ORIGINAL_DST) and
// dials 127.0.0.1:port on the host only when Allow says the port is the
// command's. A connection to a port no one in the box listens on and Allow
// refuses is closed and recorded; one to a server of the box's own (its
// tests' local server) is joined to it inside the namespace.

const soOriginalDst = 80 // linux/netfilter_ipv4.h

// netnsDir is where `ip netns` keeps named namespaces.
const netnsDir = "/run/netns"

type network struct {
	name string // ip netns name
	ln   net.Listener
	port int
	uid  int

	check func(port int) (ok bool, unsure string) // Request.Check, or Request.Allow as one (nil: none)
	guard func(port int) func(*http.Request) string
	owns  func(sandboxID string) (bool, error)

	maxConns int64        // Limits.Conns
	active   atomic.Int64 // connections held now
	// unbounded: Config.Unbounded (no cap, no reserve, no guard idle timeout)
	unbounded bool

	guardMu sync.Mutex
	guarded map[int]*chanListener // port → the HTTP server's listener

	mu           sync.Mutex
	refused      []Refusal
	refusedCount int
	notOwn       map[int]bool // distinct ports refused for sure (ScanPorts)
	doubts       []doubted    // connections the grader could not judge (doubt)
	doubtCount   int
	brokenList   []Refusal
	brokenCount  int
	conns        sync.WaitGroup
	closing      chan struct{}
}

func (n *network) path() string { return filepath.Join(netnsDir, n.name) }

// newNetwork makes the namespace, brings lo up, opens the forwarder inside
// it and installs the redirect for uid.
func newNetwork(name string, uid int, req Request, maxConns int64, unbounded bool) (*network, error) {
	ip, err := exec.LookPath("ip")
	if err != nil {
		return nil, errors.New("ip (iproute2) is not installed")
	}
	ipt, err := exec.LookPath("iptables")
	if err != nil {
		return nil, errors.New("iptables is not installed")
	}
	n := &network{name: name, uid: uid, check: req.Check, guard: req.Guard, owns: req.Owns, maxConns: maxConns,
		unbounded: unbounded, closing: make(chan struct{}), guarded: map[int]*chanListener{}, notOwn: map[int]bool{}}
	if allow := req.Allow; n.check == nil && allow != nil {
		n.check = func(port int) (bool, string) { return allow(port), "" }
	}
	if out, err := exec.Command(ip, "netns", "add", name).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ip netns add: %v: %s", err, out)
	}
	fail := func(err error) (*network, error) {
		n.close()
		return nil, err
	}
	if out, err := exec.Command(ip, "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		return fail(fmt.Errorf("lo up: %v: %s", err, out))
	}
	ln, err := inNetns(n.path(), func() (net.Listener, error) {
		return net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(forwarderPort)))
	})
	if err != nil {
		return fail(fmt.Errorf("forwarder listener in the namespace: %w", err))
	}
	n.ln = ln
	n.port = ln.Addr().(*net.TCPAddr).Port
	rule := []string{"netns", "exec", name, ipt, "-w", "-t", "nat", "-A", "OUTPUT", "-p", "tcp",
		"-m", "owner", "--uid-owner", strconv.Itoa(uid), "-j", "REDIRECT", "--to-ports", strconv.Itoa(n.port)}
	if out, err := exec.Command(ip, rule...).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("iptables redirect: %v: %s", err, out))
	}
	go n.serve()
	return n, nil
}

// inNetns runs f on an OS thread switched into the namespace at path, then
// switches back. A thread that cannot switch back is never reused (its
// goroutine exits locked, so the runtime ends the thread).
func inNetns[T any](path string, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var zero T
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{zero, err}
			return
		}
		defer orig.Close()
		ns, err := os.Open(path)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{zero, err}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{zero, fmt.Errorf("setns: %w", err)}
			return
		}
		v, ferr := f()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{v, ferr} // stay locked: this thread dies with the goroutine
			return
		}
		runtime.UnlockOSThread()
		ch <- result{v, ferr}
	}()
	r := <-ch
	return r.v, r.err
}

func (n *network) serve() {
	for {
		c, err := n.ln.Accept()
		if err != nil {
			select {
			case <-n.closing:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A passing failure (out of file descriptors, an aborted
			// handshake) must not stop the box's network for good.
			n.broke("?", "the grader's forwarder could not accept a connection: "+err.Error())
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if !n.admit(c) {
			continue
		}
		n.conns.Add(1)
		go func() {
			defer n.conns.Done()
			defer releaseGraderFDs()
			defer n.active.Add(-1)
			n.handle(c)
		}()
	}
}

// admit takes a place for c under the box's connection cap and the
// grader's descriptor reserve, or closes c and records why.
func (n *network) admit(c net.Conn) bool {
	refuse := func(record func(addr, why string), why string) bool {
		addr := "?"
		if ip, port, err := originalDst(c); err == nil {
			addr = net.JoinHostPort(ip.String(), strconv.Itoa(port))
		}
		_ = c.Close()
		record(addr, why)
		return false
	}
	if n.unbounded {
		n.active.Add(1)
		fdInUse.Add(1) // given back as every connection's share is
		return true
	}
	if n.active.Add(1) > n.maxConns {
		n.active.Add(-1)
		return refuse(n.refuse, RefusedConnCap)
	}
	if !takeGraderFDs() {
		n.active.Add(-1)
		_, reserve := GraderNoFile()
		return refuse(n.broke, fmt.Sprintf("the grader keeps %d descriptors in reserve: every box's connections together are at their bound", reserve))
	}
	return true
}

// originalDst is where the redirected connection was going.
func originalDst(c net.Conn) (net.IP, int, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil, 0, errors.New("not TCP")
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, 0, err
	}
	var mreq *unix.IPv6Mreq
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		mreq, gerr = unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, soOriginalDst)
	}); err != nil {
		return nil, 0, err
	}
	if gerr != nil {
		return nil, 0, gerr
	}
	a := mreq.Multiaddr
	return net.IPv4(a[4], a[5], a[6], a[7]), int(a[2])<<8 | int(a[3]), nil
}

func (n *network) handle(c net.Conn) {
	defer c.Close()
	ip, port, err := originalDst(c)
	if err != nil {
		n.broke("?", "the grader's forwarder could not read the connection's destination: "+err.Error())
		return
	}
	addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
	var up net.Conn
	allowed, decided := false, true
	if ip.IsLoopback() {
		// Allow is asked even for the forwarder's own port number: the
		// namespace's ports are its own, so the forwarder's (picked at
		// random) may be the very number of the target's port on the host.
		// A connection to it is then the command's call to its target, and
		// refusing it (as once) failed an honest command's first create in
		// about one box of several thousand, graded as the submission's.
		allowed, decided = n.allowed(addr, port)
	}
	switch {
	case !decided:
		return // recorded by allowed
	case allowed:
		if n.guard != nil {
			if g := n.guard(port); g != nil {
				n.serveGuarded(port, g, c)
				return
			}
		}
		up, err = dialHost(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			if ownFault(err) {
				// The grader's machine ran out (descriptors, memory, local
				// ports): its break, never the command's doing.
				n.broke(addr, "the grader's forwarder could not dial the allowed port: "+err.Error())
			}
			// Otherwise the allowed service is down (a sandbox the command
			// removed itself, say): the client sees the connection close.
			return
		}
	case port == n.port:
		// Not a port of the command's, and inside the namespace that port
		// is the forwarder itself: never joined to itself.
		n.refuseNotOwn(addr, port)
		return
	default:
		// A server of the box's own (its tests' local server)? Joined inside
		// the namespace; never the host's.
		up, err = inNetns(n.path(), func() (net.Conn, error) { return net.DialTimeout("tcp4", addr, 2*time.Second) })
		if err != nil {
			n.refuseNotOwn(addr, port)
			return
		}
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		// Plain reads and writes, never splice(2): a splice holds a pipe
		// (two more of the grader's descriptors) per direction for as long
		// as the connection idles.
		_, _ = io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 32<<10))
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	upDone := make(chan struct{})
	go pipe(up, c)
	go func() { pipe(c, up); close(upDone) }()
	grace := make(<-chan time.Time)
	for left := 2; left > 0; {
		select {
		case <-done:
			left--
		case <-upDone:
			// The upstream hung up (a server's idle timeout): the box gets
			// HalfCloseGrace to finish; it never holds the pair for good.
			upDone = nil
			grace = time.After(halfCloseGrace)
		case <-grace:
			return
		case <-n.closing:
			return
		}
	}
}

// idleTimeout and readHeaderTimeout are the guard's (none when unbounded:
// for net/http a negative one is none, a zero one falls back to another).
func (n *network) idleTimeout() time.Duration {
	if n.unbounded {
		return -1
	}
	return guardIdle
}

func (n *network) readHeaderTimeout() time.Duration {
	if n.unbounded {
		return -1
	}
	return ReadHeaderTimeout
}

// dialHost dials an allowed port on the host (tests fail it).
var dialHost = func(addr string) (net.Conn, error) { return net.DialTimeout("tcp4", addr, 10*time.Second) }

// ownFault: err is the grader's own machine running out, whoever asked.
func ownFault(err error) bool {
	for _, e := range []error{unix.EMFILE, unix.ENFILE, unix.ENOMEM, unix.ENOBUFS, unix.EADDRNOTAVAIL} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// forwarderPort is the port the forwarder listens on inside the box's
// namespace (0: one the kernel picks; tests pick the target's own).
var forwarderPort = 0

// guardIdle and halfCloseGrace are IdleTimeout and HalfCloseGrace (tests
// shorten them).
var (
	guardIdle      = IdleTimeout
	halfCloseGrace = HalfCloseGrace
)

// allowWait bounds how long a connection waits for Allow: its answer may
// need a read of the target (a sandbox created a moment ago), and a target
// that never answers must not hold the connection, or the box's close that
// waits for its connections, forever.
var allowWait = 30 * time.Second

// allowed asks Check in a goroutine of its own and waits for it at most
// allowWait, or until the box closes. No answer, or a no the grader was not
// sure of (unsure), is the grader's break, never the command's refusal,
// unless the box scanned (doubt): the connection is closed and recorded
// (decided false).
func (n *network) allowed(addr string, port int) (ok, decided bool) {
	if n.check == nil {
		return false, true
	}
	type verdict struct {
		ok     bool
		unsure string
	}
	ch := make(chan verdict, 1)
	go func() {
		ok, unsure := n.check(port)
		ch <- verdict{ok, unsure}
	}()
	t := time.NewTimer(allowWait)
	defer t.Stop()
	select {
	case v := <-ch:
		if !v.ok && v.unsure != "" {
			n.doubt(addr, "the grader could not tell whether the port is this submission's: "+v.unsure, v.unsure)
			return false, false
		}
		return v.ok, true
	case <-t.C:
		n.doubt(addr, fmt.Sprintf("the grader could not tell within %s whether the port is this submission's", allowWait),
			fmt.Sprintf("no answer within %s", allowWait))
		return false, false
	case <-n.closing:
		return false, false
	}
}

// doubt records a connection the grader could not judge (why: the cause;
// broken: the grader's break it is, unless the box scanned). Which one is
// told when the status is read (scanning), so that the first doubts of a
// scan, before it passed ScanPorts, count as the scan's too.
func (n *network) doubt(addr, broken, why string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.doubtCount++
	if len(n.doubts) < MaxRefusals {
		n.doubts = append(n.doubts, doubted{Refusal{Time: time.Now().UTC(), Addr: addr, Reason: broken}, why})
	}
}

// doubted is a connection the grader could not judge.
type doubted struct {
	Refusal        // as the grader's break
	why     string // the cause (for the scan's refusal)
}

// scanning: the box refused more than ScanPorts distinct ports for sure
// (n.mu held). Its doubts are then its refusals, saying so, else the
// grader's breaks.
func (n *network) scanning() bool { return len(n.notOwn) > ScanPorts }

// doubtsAs are the doubts as refusals (the scan's) or breaks (n.mu held).
func (n *network) doubtsAs(scan bool) []Refusal {
	out := make([]Refusal, 0, len(n.doubts))
	for _, d := range n.doubts {
		r := d.Refusal
		if scan {
			r.Reason = fmt.Sprintf("%s: %d ports not its own asked for (more than %d: a port scan); whether this one was its own was not told (%s) amid look-ups its own flood queued: its refusal, not the grader's break",
				ScanReason, len(n.notOwn), ScanPorts, d.why)
		}
		out = append(out, r)
	}
	return out
}

// merged is a and b in time order, the first MaxRefusals.
func merged(a, b []Refusal) []Refusal {
	out := append(append([]Refusal(nil), a...), b...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	if len(out) > MaxRefusals {
		out = out[:MaxRefusals]
	}
	return out
}

// refuseNotOwn refuses a connection to a port that is surely not the
// command's (Check read everything, and no server of the box's own
// listened on it), and counts the port toward ScanPorts.
func (n *network) refuseNotOwn(addr string, port int) {
	n.mu.Lock()
	n.notOwn[port] = true
	n.mu.Unlock()
	n.refuse(addr, "not a port of this submission's target, model, CSV or data service")
}

func (n *network) refuse(addr, why string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.refusedCount++
	if len(n.refused) < MaxRefusals {
		n.refused = append(n.refused, Refusal{Time: time.Now().UTC(), Addr: addr, Reason: why})
	}
}

// broke records an exchange the grader's own forwarder or guard broke.
func (n *network) broke(addr, why string) { n.brokeOn(addr, "", why) }

// brokeOn is broke for an exchange on a sandbox-scoped route (sandbox "":
// none).
func (n *network) brokeOn(addr, sandbox, why string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.brokenCount++
	if len(n.brokenList) < MaxRefusals {
		n.brokenList = append(n.brokenList, Refusal{Time: time.Now().UTC(), Addr: addr, Reason: why, Sandbox: sandbox})
	}
}

// broken are the grader's breaks: the doubts too, unless the box scanned.
func (n *network) broken() ([]Refusal, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.scanning() {
		return append([]Refusal(nil), n.brokenList...), n.brokenCount
	}
	return merged(n.brokenList, n.doubtsAs(false)), n.brokenCount + n.doubtCount
}

// refusals are the box's refusals: the doubts too when it scanned.
func (n *network) refusals() ([]Refusal, int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.scanning() {
		return append([]Refusal(nil), n.refused...), n.refusedCount
	}
	return merged(n.refused, n.doubtsAs(true)), n.refusedCount + n.doubtCount
}

// serveGuarded hands c to the port's HTTP reverse proxy, which lets a
// request through only when g says "" (every refusal recorded), and waits
// until the connection is done.
func (n *network) serveGuarded(port int, g func(*http.Request) string, c net.Conn) {
	n.guardMu.Lock()
	ln := n.guarded[port]
	if ln == nil {
		ln = &chanListener{ch: make(chan net.Conn), done: make(chan struct{}), addr: c.LocalAddr()}
		n.guarded[port] = ln
		target := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
		where := func(r *http.Request) string {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + " " + r.Method + " " + clipPath(r.RequestURI)
		}
		sandbox := func(r *http.Request) string { id, _ := requestSandbox(r); return id }
		rp := &httputil.ReverseProxy{
			Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target); r.Out.Host = r.In.Host },
			Transport:     notingTransport{http.DefaultTransport},
			FlushInterval: -1,
			ErrorLog:      log.New(io.Discard, "", 0),
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				if upstreamsFault(r, err) {
					// The command still waits, and sent its request whole:
					// the upstream failed it.
					n.brokeOn(where(r), sandbox(r), "the guard's upstream failed: "+err.Error())
				}
				w.WriteHeader(http.StatusBadGateway)
			},
		}
		srv := &http.Server{
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				why := g(r)
				if why == "" {
					why = n.notOwned(r)
				}
				if why != "" {
					n.refuse(where(r), why)
					http.Error(w, "refused by the grader's confinement: "+why, http.StatusForbidden)
					return
				}
				// Full duplex (internal/fullduplex): an upstream's answer streams
				// before it has the whole body (a command's output), and the grader
				// must not cut it (it did: "use of closed network connection",
				// recorded as the grader's break).
				defer fullduplex.Enable(w, r)()
				nt := &upstreamNote{}
				r = r.WithContext(context.WithValue(r.Context(), upstreamNoteKey{}, nt))
				if r.Body != nil && r.Body != http.NoBody {
					// A body the command cut short fails the upstream
					// request too: that is the command's doing (never a
					// read after close: commandBody).
					r.Body = commandBody(r.Body, nt)
				}
				defer func() {
					if p := recover(); p != nil {
						// The proxy aborted the exchange: the command sees
						// its connection close, with no answer or half of
						// one. The grader's fault only when the upstream's
						// answer broke off (not the command hanging up).
						if err := nt.get(); err != nil && upstreamsFault(r, err) {
							n.brokeOn(where(r), sandbox(r), "the upstream's answer broke off under the guard: "+err.Error())
						}
						panic(p)
					}
				}()
				rp.ServeHTTP(w, r)
			}),
			ReadHeaderTimeout: n.readHeaderTimeout(),
			IdleTimeout:       n.idleTimeout(),
			ErrorLog:          log.New(io.Discard, "", 0),
		}
		go func() { _ = srv.Serve(ln) }()
		go func() { <-n.closing; _ = srv.Close() }()
	}
	n.guardMu.Unlock()
	wc := &watchedConn{Conn: c, closed: make(chan struct{})}
	select {
	case ln.ch <- wc:
	case <-n.closing:
		return
	}
	select {
	case <-wc.closed:
	case <-n.closing:
	}
}

// notOwned says why r, on a sandbox-scoped route, is refused: its sandbox
// is not the command's submission's, or the grader could not tell ("" when
// it goes through).
func (n *network) notOwned(r *http.Request) string {
	if n.owns == nil {
		return ""
	}
	id, ok := requestSandbox(r)
	if !ok {
		return ""
	}
	mine, err := n.owns(id)
	switch {
	case err != nil:
		return fmt.Sprintf("the grader could not tell whether sandbox %q is this submission's: %v", clipPath(id), err)
	case !mine:
		return fmt.Sprintf("sandbox %q is not this submission's", clipPath(id))
	}
	return ""
}

// upstreamsFault: an error of the guard's upstream that is not the command's
// doing: not the command hanging up (which cancels the request's context),
// not a request body it cut short.
func upstreamsFault(r *http.Request, err error) bool {
	if nt, ok := r.Context().Value(upstreamNoteKey{}).(*upstreamNote); ok && nt.client() != nil {
		return false // the command cut its own request short
	}
	return r.Context().Err() == nil && !errors.Is(err, context.Canceled)
}

// upstreamNote keeps the first error reading an upstream answer's body (the
// guard's request context carries it to notingTransport).
type upstreamNote struct {
	mu        sync.Mutex
	err       error // reading the upstream's answer
	clientErr error // reading the command's request body
}

func (u *upstreamNote) setClient(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.clientErr == nil {
		u.clientErr = err
	}
}

func (u *upstreamNote) client() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.clientErr
}

type upstreamNoteKey struct{}

func (u *upstreamNote) set(err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil {
		u.err = err
	}
}

func (u *upstreamNote) get() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.err
}

// commandBody notes in nt the command's request body failing (cut short),
// never a read after close: the guard closes the body when its handler
// returns (fullduplex.Enable), the upstream having answered (or broken off)
// before taking it all, and the transport's writer may read once more (such
// a read once hid the upstream's cut answer).
func commandBody(body io.ReadCloser, nt *upstreamNote) io.ReadCloser {
	return &notingBody{ReadCloser: body, set: func(err error) {
		if !errors.Is(err, http.ErrBodyReadAfterClose) {
			nt.setClient(err)
		}
	}}
}

// notingTransport notes a broken upstream answer body in the request's
// upstreamNote.
type notingTransport struct{ http.RoundTripper }

func (t notingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.RoundTripper.RoundTrip(req)
	if nt, ok := req.Context().Value(upstreamNoteKey{}).(*upstreamNote); ok && res != nil && res.Body != nil {
		res.Body = &notingBody{ReadCloser: res.Body, set: nt.set}
	}
	return res, err
}

// notingBody passes a body's first read error (not EOF) to set.
type notingBody struct {
	io.ReadCloser
	set func(error)
}

func (b *notingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		b.set(err)
	}
	return n, err
}

func clipPath(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// chanListener is a net.Listener fed connections by the forwarder.
type chanListener struct {
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
	addr net.Addr
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}
func (l *chanListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *chanListener) Addr() net.Addr { return l.addr }

// watchedConn says when the HTTP server closed it.
type watchedConn struct {
	net.Conn
	once   sync.Once
	closed chan struct{}
}

func (c *watchedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.closed) })
	return err
}

// close stops the forwarder (open connections end) and deletes the namespace.
func (n *network) close() {
	select {
	case <-n.closing:
	default:
		close(n.closing)
	}
	if n.ln != nil {
		_ = n.ln.Close()
	}
	// Every connection ends on closing (its reads and dials are bounded);
	// still, the box's end never waits on one forever.
	waited := make(chan struct{})
	go func() { n.conns.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
	}
	deleteNetns(n.name)
}

func deleteNetns(name string) {
	if ip, err := exec.LookPath("ip"); err == nil {
		_ = exec.Command(ip, "netns", "del", name).Run()
	}
}
