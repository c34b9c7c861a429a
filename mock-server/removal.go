package mockserver

import (
	"bytes"
	"net/http"
)

// A sandbox's removal (DELETE, TTL expiry, the admin expiry of drill D2,
// shutdown) takes effect at one instant: Server.remove forgets it in the
// registry and marks its execd endpoint gone under s.mu, and only then tears
// it down. Every request for it from then on answers as for an unknown
// sandbox; answersGone extends that to the lifecycle calls that were already
// running when the removal happened.

// answersGone wraps a lifecycle route of one sandbox ({id}): when the sandbox
// existed as the call began and was removed before it answered, the call
// answers 404 DOCKER::SANDBOX_NOT_FOUND, as for an unknown sandbox, whatever
// the handler made of the half-removed sandbox (a pause failing on a
// destroyed runtime, a state read from a dead container). The answer is
// buffered (these routes answer small JSON or text bodies) and so takes
// effect after the removal or entirely before it: the call is linearised at
// its end. A sandbox unknown at the start is the handler's own answer, and
// so is a 422 (request validation comes before the sandbox is looked up).
func (s *Server) answersGone(h http.HandlerFunc) http.HandlerFunc { return s.answersGoneIf(h, false) }

// answersGoneUnlessAccepted is answersGone for a call that starts work of
// its own (a snapshot): an accepted call (2xx) keeps its answer, since what
// it started exists (a snapshot of a sandbox removed under it then fails, as
// on Docker); any other answer is the 404.
func (s *Server) answersGoneUnlessAccepted(h http.HandlerFunc) http.HandlerFunc {
	return s.answersGoneIf(h, true)
}

func (s *Server) answersGoneIf(h http.HandlerFunc, keep2xx bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		before := s.lookup(id)
		if before == nil {
			h(w, r)
			return
		}
		buf := &bufferedAnswer{header: w.Header().Clone()}
		h(buf, r)
		accepted := keep2xx && buf.status >= 200 && buf.status < 300
		if s.lookup(id) != before && buf.status != http.StatusUnprocessableEntity && !accepted {
			notFound(w, id)
			return
		}
		dst := w.Header()
		for k := range dst {
			if _, ok := buf.header[k]; !ok {
				dst.Del(k)
			}
		}
		for k, v := range buf.header {
			dst[k] = v
		}
		if buf.status == 0 {
			buf.status = http.StatusOK
		}
		w.WriteHeader(buf.status)
		_, _ = w.Write(buf.body.Bytes())
	}
}

// bufferedAnswer holds a handler's answer until answersGone decides on it.
type bufferedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedAnswer) Header() http.Header { return b.header }

func (b *bufferedAnswer) WriteHeader(code int) {
	if b.status == 0 && code >= 200 {
		b.status = code
	}
}

func (b *bufferedAnswer) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}
