package relay

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file decides which downstream list_changed notifications are sent.
// The SDK sends one to every session shortly after any registration change;
// clients re-register their whole catalog on each (Gemini CLI warns about
// every name it already had, and renames what it thinks collides). So a
// session gets a notification of a kind (tools, prompts, resources) only
// once it has listed that kind, and the notifications of a burst of changes
// (servers joining one after the other, an upstream re-listing) are
// coalesced: one per kind per session per listChangedWindow.
//
// An upstream's own list_changed is passed on even when the merged list did
// not change (the server may have re-registered the same definitions, as the
// conformance server does, or changed what a tool does): a client of that
// server directly would be told, and would list again. It takes the same path
// as any other (the root's relayListChanged), so it too waits for the session's first
// list, reaches only the sessions that listed or listen for the kind, in
// either era, and a burst of them is coalesced, first upstream (one re-listing
// per burst, requestRefresh) and then per session.

// listChangedWindow is how long a session's notification of one kind waits
// for further changes of that kind before it is sent.
const listChangedWindow = 200 * time.Millisecond

// CatalogKind is one catalog a client lists and is notified about.
type CatalogKind int

const (
	CatTools CatalogKind = iota
	CatPrompts
	CatResources // resources and resource templates share one notification
	NumCatalogKinds
)

// listChangedKinds maps the downstream notifications to their kind.
var listChangedKinds = map[string]CatalogKind{
	"notifications/tools/list_changed":     CatTools,
	"notifications/prompts/list_changed":   CatPrompts,
	"notifications/resources/list_changed": CatResources,
}

// listedKinds records, per session and kind, whether the session has listed
// the kind and whether a notification of it is pending; and, per kind, how
// many times the catalog changed, so that a session whose first list came
// after the last change is not told of it (what a proxy registers while a
// client connects, before its first list, is in that list). After its first
// list a session is told of every change, also of one it has listed since.
type listedKinds struct {
	mu      sync.Mutex
	by      map[*mcp.ServerSession]*listState // guarded by mu
	changes [NumCatalogKinds]uint64           // guarded by mu; changes of the registered catalog per kind
}

type listState struct {
	listed  [NumCatalogKinds]bool
	pending [NumCatalogKinds]bool
	seen    [NumCatalogKinds]uint64 // changes[k] when the session first listed k (saw)
	saw     [NumCatalogKinds]bool   // seen[k] is set
}

// changed records a change of kind k to the catalog the sessions list.
func (l *listedKinds) changed(k CatalogKind) {
	l.mu.Lock()
	l.changes[k]++
	l.mu.Unlock()
}

// saw records that ss is listing kind k from the catalog as it is now, if
// this is its first list of k.
func (l *listedKinds) saw(ss *mcp.ServerSession, k CatalogKind) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.by[ss]; st != nil && !st.saw[k] {
		st.seen[k], st.saw[k] = l.changes[k], true
	}
}

// listed records that ss lists kind k now; it reports whether ss is new here.
func (l *listedKinds) listed(ss *mcp.ServerSession, k CatalogKind) (first bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = make(map[*mcp.ServerSession]*listState)
	}
	st := l.by[ss]
	if st == nil {
		st = new(listState)
		l.by[ss] = st
		first = true
	}
	st.listed[k] = true
	return first
}

// offer is given a list_changed of kind k for ss. If ss has not listed k it
// is dropped; if one is already pending for ss and k it is merged into it;
// else send runs after window (on a timer's goroutine).
func (l *listedKinds) offer(ss *mcp.ServerSession, k CatalogKind, window time.Duration, send func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.by[ss]
	if st == nil || !st.listed[k] || st.pending[k] {
		return
	}
	st.pending[k] = true
	time.AfterFunc(window, func() {
		l.mu.Lock()
		st.pending[k] = false
		current := st.seen[k] == l.changes[k] // first listed after the last change
		l.mu.Unlock()
		if !current {
			send()
		}
	})
}

// forget drops an ended session.
func (l *listedKinds) forget(ss *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.by, ss)
}

// Changed records a change of kind k to the catalog the sessions list
// (listedKinds.changed).
func (s *Relay) Changed(k CatalogKind) {
	s.listed.changed(k)
}

// Saw records that ss is listing kind k from the catalog as it is now, if
// this is its first list of k (listedKinds.saw).
func (s *Relay) Saw(ss *mcp.ServerSession, k CatalogKind) {
	s.listed.saw(ss, k)
}

// MarkListed records that ss may be notified of changes of kind k, and
// forgets ss when it ends.
func (s *Relay) MarkListed(ss *mcp.ServerSession, k CatalogKind) {
	if s.listed.listed(ss, k) {
		s.opts.WhenSessionEnds(ss, func() { s.listed.forget(ss) })
	}
}

// codeServerError is JSON-RPC's implementation-defined server error.
const codeServerError = -32000

// MaxListensPerSession bounds the subscriptions/listen streams one session
// holds open at once: over stdio a client could open them without end (over
// HTTP each is a request of its own, capped at the endpoint).
const MaxListensPerSession = 32

// listenCount counts the open listens per session.
type listenCount struct {
	mu sync.Mutex
	by map[*mcp.ServerSession]int // guarded by mu
}

// enter claims a listen slot of ss, or reports false when it has none left.
func (l *listenCount) enter(ss *mcp.ServerSession) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by == nil {
		l.by = make(map[*mcp.ServerSession]int)
	}
	if l.by[ss] >= MaxListensPerSession {
		return false
	}
	l.by[ss]++
	return true
}

func (l *listenCount) leave(ss *mcp.ServerSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.by[ss]--; l.by[ss] <= 0 {
		delete(l.by, ss)
	}
}

// ServeListen serves a subscriptions/listen within MaxListensPerSession.
func (s *Relay) ServeListen(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return next(ctx, method, req)
	}
	if !s.listens.enter(ss) {
		return nil, &jsonrpc.Error{Code: codeServerError, Message: fmt.Sprintf(
			"too many subscriptions/listen streams open on this connection (at most %d); close one (notifications/cancelled) before opening another, or ask for more kinds in one listen", MaxListensPerSession)}
	}
	defer s.listens.leave(ss)
	s.listen(req)
	return next(ctx, method, req)
}

// listen handles a modern client's subscriptions/listen: a listen for a
// kind's list_changed is that client's opt-in (it may never have listed on
// this session: over HTTP every request has a session of its own), so the
// notifications it asked for are let through, coalesced as for any session.
// Resource subscriptions in it reach handleSubscribe through the SDK.
func (s *Relay) listen(req mcp.Request) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	p, _ := req.GetParams().(*mcp.SubscriptionsListenParams)
	if ss == nil || p == nil || p.Notifications == nil {
		return
	}
	n := p.Notifications
	for k, want := range map[CatalogKind]bool{CatTools: n.ToolsListChanged, CatPrompts: n.PromptsListChanged, CatResources: n.ResourcesListChanged} {
		if want {
			s.MarkListed(ss, k)
		}
	}
}

// ListChangedMiddleware holds back the list_changed notifications that a
// session must not get yet, and coalesces the rest (see the top of this file).
func (s *Relay) ListChangedMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		k, ok := listChangedKinds[method]
		if !ok {
			return next(ctx, method, req)
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if !ok || ss == nil {
			return next(ctx, method, req)
		}
		s.listed.offer(ss, k, listChangedWindow, func() {
			if s.opts.Closed() {
				return
			}
			ctx, cancel := context.WithTimeout(s.opts.Life, 10*time.Second)
			defer cancel()
			if _, err := next(ctx, method, req); err != nil {
				s.opts.Log.Debug("sending list_changed", "method", method, "err", err)
			}
		})
		return nil, nil
	}
}
