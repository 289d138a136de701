package streamable

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// httpSessions is the proxy's view of the open HTTP sessions: who owns each,
// how many requests each has open, whether its GET stream is open, and the
// cap on how many exist. It closes a session that has been idle (no request
// open, no call in flight) for the idle timeout.
type httpSessions struct {
	core  Core
	max   int
	idle  time.Duration
	store SessionStore // the root's Options.Sessions: the records replicas share; nil: this process only
	adopt sync.Mutex   // serialises taking over sessions from their records (adopt)

	mu      sync.Mutex
	byID    map[string]*httpSession // guarded by mu
	pending int                     // new-session requests being served; guarded by mu
}

// httpSession is one open HTTP session.
type httpSession struct {
	id     string
	owner  peer
	ss     *mcp.ServerSession
	tr     *mcp.StreamableServerTransport // set for a session taken over from its record (adopt); nil: the SDK's handler holds it
	shared bool                           // its record was written (share); guarded by httpSessions.mu once registered
	open   int                            // requests open; guarded by httpSessions.mu
	stream bool                           // the GET stream is open; guarded by httpSessions.mu
	timer  *time.Timer                    // fires after idle with open == 0; guarded by httpSessions.mu
}

// enterResult says why a request may not use a session.
type enterResult int

const (
	entered enterResult = iota
	unknownSession
	otherOwner
	streamOpen
	sharedDown   // the shared session records cannot be read (the root's Options.Sessions)
	tooManyAdopt // a session to take over finds no place (max)
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
	for c := range h.core.MCPServer().Sessions() {
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
	// Shared here if initialize was handled already, else by
	// initializeMiddleware: both decide under mu.
	share := h.store != nil && ss.InitializeParams() != nil
	e.shared = share
	h.mu.Unlock()
	if share {
		h.share(e)
	}
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
	if h.core.Calls().Busy(e.id) {
		e.timer.Reset(h.idle)
		h.mu.Unlock()
		return
	}
	delete(h.byID, e.id) // a request from now on finds no session
	h.mu.Unlock()
	h.core.Log().Info("closing idle HTTP session", "idle", h.idle.String(), "owner", e.owner.String())
	_ = e.ss.Close()
}

// SessionStore keeps a record of each HTTP session of the initialize era
// (sessionRecord), so that a replica can serve a session that another
// created: the record names the session's owner and holds what the client
// said at initialize. Implementations must be safe for concurrent use. If
// the proxy has none (its Options.Sessions is nil), a session lives in the
// process that created it only.
type SessionStore interface {
	// PutSession records session id as record, for ttl.
	PutSession(ctx context.Context, id string, record []byte, ttl time.Duration) error
	// GetSession returns the record of id, and false when there is none
	// (it ended, expired, or never existed).
	GetSession(ctx context.Context, id string) ([]byte, bool, error)
	// TouchSession extends the life of id's record to ttl from now, and
	// reports false when there is none.
	TouchSession(ctx context.Context, id string, ttl time.Duration) (bool, error)
	// DeleteSession removes id's record: no replica serves it from then on.
	DeleteSession(ctx context.Context, id string) error
}

// sessionRecord is what a replica needs to serve an initialize-era session
// that another created (the root's Options.Sessions): who owns it, and what the client
// said at initialize (its version, info and capabilities). The SDK assigns
// a session id before it reads initialize, so the id cannot carry this
// itself; a record in the shared store also ends everywhere at once with a
// DELETE, and expires when the session is idle on every replica.
type sessionRecord struct {
	Addr string                `json:"addr,omitempty"` // the owner's peer (peer)
	UID  int                   `json:"uid"`
	User string                `json:"user,omitempty"`
	Init *mcp.InitializeParams `json:"init"`
	// Roots is Init's Capabilities.RootsV2, which the SDK's type leaves out
	// of its JSON (it is written from the deprecated Roots, which cannot say
	// "absent"): without it a session taken over would lose roots.
	Roots *mcp.RootCapabilities `json:"roots,omitempty"` //lint:ignore SA1019 roots are part of the protocol versions the proxy serves
}

func (rec *sessionRecord) owner() peer {
	p := peer{UID: rec.UID, User: rec.User}
	if rec.Addr != "" {
		p.Addr, _ = netip.ParseAddr(rec.Addr)
	}
	return p
}

// share writes e's record to the store, once its session is initialized.
// A store that cannot be reached leaves the session to this replica (and
// says so).
func (h *httpSessions) share(e *httpSession) {
	init := e.ss.InitializeParams()
	if init == nil {
		return
	}
	rec := sessionRecord{UID: e.owner.UID, User: e.owner.User, Init: init}
	if init.Capabilities != nil {
		rec.Roots = init.Capabilities.RootsV2 //lint:ignore SA1019 roots are part of the protocol versions the proxy serves
	}
	if e.owner.Addr.IsValid() {
		rec.Addr = e.owner.Addr.String()
	}
	raw, err := json.Marshal(rec)
	if err == nil {
		err = h.store.PutSession(context.Background(), e.id, raw, h.idle)
	}
	if err != nil {
		h.core.Log().Warn("HTTP session not shared with the other replicas: only this one can serve it", "err", err)
	}
}

// initializeMiddleware writes the record of a session the moment its
// initialize has been handled, before the answer leaves: the client's next
// request may reach another replica. A session registered only after that
// (register) is shared there instead.
func (h *httpSessions) initializeMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if method != "initialize" || err != nil || !ok || ss.ID() == "" {
			return res, err
		}
		h.mu.Lock()
		e := h.byID[ss.ID()]
		share := e != nil && !e.shared && e.ss.InitializeParams() != nil
		if share {
			e.shared = true
		}
		h.mu.Unlock()
		if share {
			h.share(e)
		}
		return res, err
	}
}

// crossReplica checks a request of owner for session id against the shared
// records, after enter answered e, res: a session this process holds must
// still have its record (a DELETE through another replica, or the idle
// timeout on all of them, ended it), and one it does not hold is taken over
// from its record, bound to the same owner. Without a store, or with one
// that cannot be reached for a session held here, it returns e, res.
func (m *mcpEndpoint) crossReplica(r *http.Request, id string, owner peer, stream bool, e *httpSession, res enterResult) (*httpSession, enterResult) {
	h := m.sessions
	if h.store == nil || (res != entered && res != unknownSession) {
		return e, res
	}
	ctx := r.Context()
	if res == entered {
		ok, err := h.store.TouchSession(ctx, id, h.idle)
		if err != nil || ok {
			return e, res
		}
		h.leave(e, stream)
		h.remove(e)
		_ = e.ss.Close()
		return nil, unknownSession
	}
	h.adopt.Lock()
	defer h.adopt.Unlock()
	if e, res := h.enter(id, owner, stream); res != unknownSession {
		return e, res // another request took it over meanwhile
	}
	raw, ok, err := h.store.GetSession(ctx, id)
	switch {
	case err != nil:
		return nil, sharedDown
	case !ok:
		return nil, unknownSession
	}
	var rec sessionRecord
	if json.Unmarshal(raw, &rec) != nil || rec.Init == nil {
		return nil, unknownSession
	}
	if rec.owner() != owner {
		return nil, otherOwner
	}
	if rec.Init.Capabilities != nil {
		rec.Init.Capabilities.RootsV2 = rec.Roots //lint:ignore SA1019 roots are part of the protocol versions the proxy serves
	}
	if !h.reserve() {
		return nil, tooManyAdopt
	}
	tr := &mcp.StreamableServerTransport{SessionID: id, EventStore: m.events}
	state := &mcp.ServerSessionState{
		InitializeParams:          rec.Init,
		InitializedParams:         &mcp.InitializedParams{},
		NegotiatedProtocolVersion: r.Header.Get("Mcp-Protocol-Version"),
		LogLevel:                  "info",
	}
	// The session outlives the request that takes it over.
	ss, err := m.core.MCPServer().Connect(context.WithoutCancel(ctx), tr, &mcp.ServerSessionOptions{State: state})
	if err != nil {
		h.unreserve()
		m.core.Log().Warn("taking over an HTTP session from its shared record failed", "err", err)
		return nil, sharedDown
	}
	ne := &httpSession{id: id, owner: owner, ss: ss, tr: tr, open: 1, stream: stream}
	h.mu.Lock()
	h.pending--
	if h.byID == nil {
		h.byID = make(map[string]*httpSession)
	}
	h.byID[id] = ne
	h.mu.Unlock()
	go func() {
		// Owned by the session: returns when it closes, however it closes.
		_ = ss.Wait()
		h.remove(ne)
	}()
	return ne, entered
}

// forget removes the shared record of session id, which its client ended
// (DELETE): no replica serves it from then on.
func (h *httpSessions) forget(ctx context.Context, id string) {
	if h.store == nil {
		return
	}
	if err := h.store.DeleteSession(ctx, id); err != nil {
		h.core.Log().Warn("the shared record of an ended HTTP session could not be removed; other replicas serve it until it expires", "err", err)
	}
}

// serveAdopted serves a request of a session taken over from its record
// (crossReplica) on its own transport, as the SDK's handler serves those
// it created.
func (m *mcpEndpoint) serveAdopted(w http.ResponseWriter, r *http.Request, e *httpSession) {
	switch r.Method {
	case http.MethodDelete:
		m.sessions.remove(e)
		_ = e.ss.Close()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodGet, http.MethodPost:
		m.events.serveDone(e.tr, &retryWriter{ResponseWriter: m.tagIDs(w)}, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// peer is who is at the other end of a connection (session.Peer).
type peer = session.Peer

// modernSession reports whether ss speaks 2026-07-28: over HTTP every
// stateless per-request session of a modern request (as the root's
// modernSession).
func modernSession(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= era.Version
}
