package mockserver

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/osb-capstone/acceptance/mock-server/wire"
)

// After a sandbox is removed (deleted, expired, or the server shuts down),
// its execd endpoint's loopback port keeps listening for a grace period
// (Config.ExecdGracePeriod, default 10 minutes, or until the server closes;
// a documented mock extension). Every connection is accepted, its request
// line read with a short deadline (afterRemovalReadTimeout), recorded in the
// audit as an event of kind execd_after_removal (sandbox id, method, path,
// time) and then reset (SO_LINGER 0): the client sees a connection error, as
// with the real, gone container, and a grader can see that a client went on
// calling a sandbox after it disappeared (drill D2).

const (
	defaultExecdGrace       = 10 * time.Minute
	afterRemovalReadTimeout = time.Second
	afterRemovalMaxConns    = 64 // connections read at once per endpoint; more are reset unread (still recorded)
)

func (s *Server) execdGrace() time.Duration {
	switch g := s.cfg.ExecdGracePeriod; {
	case g < 0:
		return 0
	case g == 0:
		return defaultExecdGrace
	default:
		return g
	}
}

// detachableListener lets the execd endpoint's http.Server be closed while
// the socket itself stays open for the grace period: Close stops Accept (the
// server sees a closed listener) without closing the socket.
type detachableListener struct {
	*net.TCPListener
	late     func(net.Conn) // a connection accepted while detaching belongs to the grace period
	mu       sync.Mutex
	detached bool
}

func (l *detachableListener) isDetached() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.detached
}

func (l *detachableListener) Accept() (net.Conn, error) {
	if l.isDetached() {
		return nil, net.ErrClosed
	}
	c, err := l.TCPListener.Accept()
	if l.isDetached() {
		if err == nil {
			go l.late(c)
		}
		return nil, net.ErrClosed
	}
	return c, err
}

// Close detaches: a blocked Accept is woken by a past deadline.
func (l *detachableListener) Close() error {
	l.mu.Lock()
	l.detached = true
	l.mu.Unlock()
	return l.TCPListener.SetDeadline(time.Unix(1, 0))
}

// lingerSet tracks the grace-period listeners so Close can end them.
type lingerSet struct {
	mu     sync.Mutex
	closed bool
	lns    map[*lingerListener]struct{}
}

type lingerListener struct {
	ln    *net.TCPListener
	timer *time.Timer
	once  sync.Once
}

func (l *lingerListener) close() { l.once.Do(func() { _ = l.ln.Close() }) }

func (ls *lingerSet) add(l *lingerListener) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.closed {
		return false
	}
	if ls.lns == nil {
		ls.lns = map[*lingerListener]struct{}{}
	}
	ls.lns[l] = struct{}{}
	return true
}

func (ls *lingerSet) remove(l *lingerListener) {
	ls.mu.Lock()
	delete(ls.lns, l)
	ls.mu.Unlock()
}

// closeAll ends every grace period (server shutdown).
func (ls *lingerSet) closeAll() {
	ls.mu.Lock()
	ls.closed = true
	list := make([]*lingerListener, 0, len(ls.lns))
	for l := range ls.lns {
		list = append(list, l)
	}
	ls.lns = nil
	ls.mu.Unlock()
	for _, l := range list {
		l.timer.Stop()
		l.close()
	}
}

// linger keeps dl's socket for the grace period, recording and resetting
// every connection.
func (e *execdEndpoint) linger(dl *detachableListener) {
	grace := e.s.execdGrace()
	if grace <= 0 {
		_ = dl.TCPListener.Close()
		return
	}
	l := &lingerListener{ln: dl.TCPListener}
	l.timer = time.AfterFunc(grace, func() {
		e.s.lingers.remove(l)
		l.close()
	})
	if !e.s.lingers.add(l) { // the server is closing
		l.timer.Stop()
		l.close()
		return
	}
	_ = dl.TCPListener.SetDeadline(time.Time{})
	sem := make(chan struct{}, afterRemovalMaxConns)
	serve := func(c net.Conn) {
		select {
		case sem <- struct{}{}:
			go func() {
				defer func() { <-sem }()
				e.afterRemoval(c, false)
			}()
		default:
			e.afterRemoval(c, true)
		}
	}
	go func() {
		for {
			c, err := l.ln.Accept()
			if err != nil {
				return // closed: grace over or server shutdown
			}
			serve(c)
		}
	}()
}

// afterRemoval reads the request line (unless unread), records it and resets
// the connection.
func (e *execdEndpoint) afterRemoval(c net.Conn, unread bool) {
	ev := &wire.AfterRemoval{}
	if unread {
		ev.Note = "not read: too many connections at once"
	} else {
		_ = c.SetReadDeadline(time.Now().Add(afterRemovalReadTimeout))
		line, err := bufio.NewReaderSize(c, 8<<10).ReadSlice('\n')
		if f := strings.Fields(string(line)); err == nil && len(f) >= 2 {
			ev.Method, ev.Path = f[0], f[1]
		} else {
			ev.Note = "no request line within " + afterRemovalReadTimeout.String()
		}
	}
	e.s.audit.Record(wire.Event{SandboxID: e.sb.id, Kind: wire.KindExecdAfterRemoval, ExecdAfterRemoval: ev})
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // close sends RST: a connection error, as a vanished container gives
	}
	_ = c.Close()
}
