package session

import (
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Client is who sent a request, as its session or its _meta says.
type Client struct {
	Name, Version, Protocol string
	Modern                  bool
	Identity                string // the authenticated subject; "" without authentication
}

// Clients tracks the connected clients and the catalog mode each got,
// for status (Each) and to keep a legacy session's mode.
type Clients struct {
	mu     sync.Mutex
	legacy map[*mcp.ServerSession]*ClientEntry // guarded by mu
	modern map[Client]*ClientEntry             // recent modern clients; guarded by mu
}

// ClientEntry is one client Clients keeps.
type ClientEntry struct {
	ID       Client
	Caps     []string // the capabilities the client declared (the proxy's capNames)
	Session  string
	Mode     string
	Final    bool // decided once the initial start was over: kept
	Since    time.Time
	LastSeen time.Time
}

// maxModernClients bounds the modern clients kept for status: each request
// of one names its client, and nothing says when it is gone.
const maxModernClients = 64

// modernClientTTL is how long a modern client is listed after its last
// request.
const modernClientTTL = 10 * time.Minute

// ModeOf is the final mode a legacy session ss was given, if any.
func (r *Clients) ModeOf(ss *mcp.ServerSession) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if e := r.legacy[ss]; e != nil && e.Final {
		return e.Mode, true
	}
	return "", false
}

// KeptMode is the final mode the session ss was given, if its client is
// kept per session (a legacy session, ModeOf); a modern request's client is
// decided from its own clientInfo every time.
func (r *Clients) KeptMode(ss *mcp.ServerSession, id Client) (string, bool) {
	if id.Modern || ss == nil {
		return "", false
	}
	return r.ModeOf(ss)
}

// Record notes that the client id got mode, on ss; a legacy session keeps
// a final mode, and is to be forgotten (Forget) when it ends: Record
// reports whether ss is new here. caps is called for the capabilities of a
// client seen the first time, or without them so far.
func (r *Clients) Record(ss *mcp.ServerSession, id Client, mode string, final bool, caps func() []string) (first bool) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !id.Modern && ss != nil {
		if r.legacy == nil {
			r.legacy = make(map[*mcp.ServerSession]*ClientEntry)
		}
		if e := r.legacy[ss]; e != nil {
			if !e.Final {
				e.Mode, e.Final = mode, final
			}
			return false
		}
		r.legacy[ss] = &ClientEntry{ID: id, Caps: caps(), Session: ss.ID(), Mode: mode, Final: final, Since: now, LastSeen: now}
		return true
	}
	if r.modern == nil {
		r.modern = make(map[Client]*ClientEntry)
	}
	if e := r.modern[id]; e != nil {
		e.Mode, e.LastSeen = mode, now
		if ss != nil || e.Caps == nil {
			e.Caps = caps()
		}
		return false
	}
	for k, e := range r.modern {
		if now.Sub(e.LastSeen) > modernClientTTL {
			delete(r.modern, k)
		}
	}
	if len(r.modern) >= maxModernClients {
		var oldest Client
		var at time.Time
		for k, e := range r.modern {
			if at.IsZero() || e.LastSeen.Before(at) {
				oldest, at = k, e.LastSeen
			}
		}
		delete(r.modern, oldest)
	}
	r.modern[id] = &ClientEntry{ID: id, Caps: caps(), Mode: mode, Since: now, LastSeen: now}
	return false
}

// Forget drops an ended legacy session.
func (r *Clients) Forget(ss *mcp.ServerSession) {
	r.mu.Lock()
	delete(r.legacy, ss)
	r.mu.Unlock()
}

// Each calls f, with Clients locked, for each session open now and each
// modern client seen in the last ten minutes (modern true).
func (r *Clients) Each(f func(e *ClientEntry, modern bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.legacy {
		f(e, false)
	}
	now := time.Now()
	for _, e := range r.modern {
		if now.Sub(e.LastSeen) <= modernClientTTL {
			f(e, true)
		}
	}
}
