package proxy

import (
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpSessions is the proxy's view of the open HTTP sessions: who owns each,
// how many requests each has open, whether its GET stream is open, and the
// cap on how many exist. It closes a session that has been idle (no request
// open, no call in flight) for the idle timeout.
type httpSessions struct {
	s    *Server
	max  int
	idle time.Duration

	mu      sync.Mutex
	byID    map[string]*httpSession // guarded by mu
	pending int                     // new-session requests being served; guarded by mu
}

// httpSession is one open HTTP session.
type httpSession struct {
	id     string
	owner  peer
	ss     *mcp.ServerSession
	open   int         // requests open; guarded by httpSessions.mu
	stream bool        // the GET stream is open; guarded by httpSessions.mu
	timer  *time.Timer // fires after idle with open == 0; guarded by httpSessions.mu
}

// enterResult says why a request may not use a session.
type enterResult int

const (
	entered enterResult = iota
	unknownSession
	otherOwner
	streamOpen
)

// reserve claims a slot for a session about to be created, and reports
// false when max sessions exist (or are being created).
func (h *httpSessions) reserve() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.byID)+h.pending >= h.max {
		return false
	}
	h.pending++
	return true
}

// unreserve gives back a slot that no session took.
func (h *httpSessions) unreserve() {
	h.mu.Lock()
	h.pending--
	h.mu.Unlock()
}

// register records the session id that the SDK has just created for owner,
// in the slot reserve claimed, with the creating request open. It returns
// nil when the SDK has no such session (it ended already); the slot is then
// still reserved.
func (h *httpSessions) register(id string, owner peer) *httpSession {
	var ss *mcp.ServerSession
	for c := range h.s.server.Sessions() {
		if c.ID() == id {
			ss = c
			break
		}
	}
	if ss == nil {
		return nil
	}
	e := &httpSession{id: id, owner: owner, ss: ss, open: 1}
	h.mu.Lock()
	h.pending--
	if h.byID == nil {
		h.byID = make(map[string]*httpSession)
	}
	h.byID[id] = e
	h.mu.Unlock()
	go func() {
		// Owned by the session: returns when it closes, however it closes.
		_ = ss.Wait()
		h.remove(e)
	}()
	return e
}

// remove forgets e, once its session has closed.
func (h *httpSessions) remove(e *httpSession) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byID[e.id] == e {
		delete(h.byID, e.id)
	}
	if e.timer != nil {
		e.timer.Stop()
	}
}

// enter admits a request of owner to session id (a GET stream when stream),
// or says why not. An admitted request must be followed by leave.
func (h *httpSessions) enter(id string, owner peer, stream bool) (*httpSession, enterResult) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.byID[id]
	switch {
	case e == nil:
		return nil, unknownSession
	case e.owner != owner:
		return nil, otherOwner
	case stream && e.stream:
		return nil, streamOpen
	}
	if stream {
		e.stream = true
	}
	e.open++
	if e.timer != nil {
		e.timer.Stop()
	}
	return e, entered
}

// leave ends a request that enter (or register) admitted, and starts the
// idle timer when it was the session's last.
func (h *httpSessions) leave(e *httpSession, stream bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if stream {
		e.stream = false
	}
	e.open--
	if e.open > 0 || h.byID[e.id] != e {
		return
	}
	if e.timer == nil {
		e.timer = time.AfterFunc(h.idle, func() { h.reap(e) })
	} else {
		e.timer.Reset(h.idle)
	}
}

// reap closes e's session if it is still idle: no request open and no call
// in flight (a call whose request has gone keeps it, and is checked again
// an idle timeout later).
func (h *httpSessions) reap(e *httpSession) {
	h.mu.Lock()
	if h.byID[e.id] != e || e.open > 0 {
		h.mu.Unlock()
		return
	}
	if h.s.sessionCalls.busy(e.id) {
		e.timer.Reset(h.idle)
		h.mu.Unlock()
		return
	}
	delete(h.byID, e.id) // a request from now on finds no session
	h.mu.Unlock()
	h.s.log.Info("closing idle HTTP session", "idle", h.idle.String(), "owner", e.owner.String())
	_ = e.ss.Close()
}

// busy reports whether session id has a call in flight.
func (sc *sessionCalls) busy(id string) bool {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.calls[id]) > 0
}
