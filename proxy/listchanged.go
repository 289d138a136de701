package proxy

import (
	"context"
	"fmt"
	"maps"
	"slices"
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
// as any other (relayListChanged), so it too waits for the session's first
// list, reaches only the sessions that listed or listen for the kind, in
// either era, and a burst of them is coalesced, first upstream (one re-listing
// per burst, requestRefresh) and then per session.

// listChangedWindow is how long a session's notification of one kind waits
// for further changes of that kind before it is sent.
const listChangedWindow = 200 * time.Millisecond

// catalogKind is one catalog a client lists and is notified about.
type catalogKind int

const (
	catTools catalogKind = iota
	catPrompts
	catResources // resources and resource templates share one notification
	numCatalogKinds
)

// listChangedKinds maps the downstream notifications to their kind.
var listChangedKinds = map[string]catalogKind{
	"notifications/tools/list_changed":     catTools,
	"notifications/prompts/list_changed":   catPrompts,
	"notifications/resources/list_changed": catResources,
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
	changes [numCatalogKinds]uint64           // guarded by mu; changes of the registered catalog per kind
}

type listState struct {
	listed  [numCatalogKinds]bool
	pending [numCatalogKinds]bool
	seen    [numCatalogKinds]uint64 // changes[k] when the session first listed k (saw)
	saw     [numCatalogKinds]bool   // seen[k] is set
}

// changed records a change of kind k to the catalog the sessions list.
func (l *listedKinds) changed(k catalogKind) {
	l.mu.Lock()
	l.changes[k]++
	l.mu.Unlock()
}

// saw records that ss is listing kind k from the catalog as it is now, if
// this is its first list of k.
func (l *listedKinds) saw(ss *mcp.ServerSession, k catalogKind) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if st := l.by[ss]; st != nil && !st.saw[k] {
		st.seen[k], st.saw[k] = l.changes[k], true
	}
}

// listed records that ss lists kind k now; it reports whether ss is new here.
func (l *listedKinds) listed(ss *mcp.ServerSession, k catalogKind) (first bool) {
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
func (l *listedKinds) offer(ss *mcp.ServerSession, k catalogKind, window time.Duration, send func()) {
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

// listing handles a downstream list request of kind k: it records that the
// session listed (before the list is computed, so a change made while it is
// computed is still notified) and waits, bounded by FirstListWait, for the
// upstreams' initial start.
func (s *Server) listing(ctx context.Context, req mcp.Request, k catalogKind) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss != nil {
		s.markListed(ss, k)
	}
	s.waitListable(ctx, ss, clientOf(ctx, ss, nil).Name)
	if ss != nil {
		s.listed.saw(ss, k)
	}
}

// whenSessionEnds runs f once ss has ended, unless the proxy closes first
// (then its state goes with it).
func (s *Server) whenSessionEnds(ss *mcp.ServerSession, f func()) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		done := make(chan struct{})
		go func() { _ = ss.Wait(); close(done) }()
		select {
		case <-done:
			f()
		case <-s.closed:
		}
	}()
}

// markListed records that ss may be notified of changes of kind k, and
// forgets ss when it ends.
func (s *Server) markListed(ss *mcp.ServerSession, k catalogKind) {
	if s.listed.listed(ss, k) {
		s.whenSessionEnds(ss, func() { s.listed.forget(ss) })
	}
}

// maxListensPerSession bounds the subscriptions/listen streams one session
// holds open at once: over stdio a client could open them without end (over
// HTTP each is a request of its own, capped at the endpoint).
const maxListensPerSession = 32

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
	if l.by[ss] >= maxListensPerSession {
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

// serveListen serves a subscriptions/listen within maxListensPerSession.
func (s *Server) serveListen(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return next(ctx, method, req)
	}
	if !s.listens.enter(ss) {
		return nil, &jsonrpc.Error{Code: codeServerError, Message: fmt.Sprintf(
			"too many subscriptions/listen streams open on this connection (at most %d); close one (notifications/cancelled) before opening another, or ask for more kinds in one listen", maxListensPerSession)}
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
func (s *Server) listen(req mcp.Request) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	p, _ := req.GetParams().(*mcp.SubscriptionsListenParams)
	if ss == nil || p == nil || p.Notifications == nil {
		return
	}
	n := p.Notifications
	for k, want := range map[catalogKind]bool{catTools: n.ToolsListChanged, catPrompts: n.PromptsListChanged, catResources: n.ResourcesListChanged} {
		if want {
			s.markListed(ss, k)
		}
	}
}

// relayListChanged passes on the list_changed of kinds that server b sent,
// once its lists were fetched again and the catalog rebuilt: it registers one
// of b's entries of each kind with the SDK again, unchanged (for tools, the
// beacon: toollist.go), so that the SDK schedules its notification for every
// session (if the rebuild changed the
// list, that notification was scheduled already and this merges into it).
// A kind of which b exposes nothing is not passed on: the lists a client sees
// hold nothing of b's to change.
func (s *Server) relayListChanged(b *backend, kinds listKind) {
	l := listsOf(b.Lists())
	s.catMu.Lock()
	defer s.catMu.Unlock()
	c := s.catalog.Load()
	if c == nil || s.isClosed() {
		return
	}
	again := func(kind, key string, reg map[string]regEntry, add func()) bool {
		if _, ok := reg[key]; !ok {
			return false // not registered: nothing of it is listed
		}
		// Passed on however late a session's last list (listedKinds).
		switch kind {
		case "tool":
			s.listed.changed(catTools)
		case "prompt":
			s.listed.changed(catPrompts)
		default:
			s.listed.changed(catResources)
		}
		if err := catchPanic(add); err != nil {
			s.log.Warn(kind+" rejected on re-registering; list_changed not passed on", "name", key, "err", err)
		}
		return true
	}
	if kinds&kindTools != 0 {
		for _, t := range l.tools {
			exposed, ok := c.tools.Exposed(b.name, t.Name)
			if def := c.toolDefs[exposed]; ok && def != nil &&
				again("tool", exposed, s.reg.tools, s.notifyToolsChanged) {
				break
			}
		}
	}
	if kinds&kindPrompts != 0 {
		for _, p := range l.prompts {
			exposed, ok := c.prompts.Exposed(b.name, p.Name)
			if def := c.promptDefs[exposed]; ok && def != nil &&
				again("prompt", exposed, s.reg.prompts, func() { s.server.AddPrompt(def, s.handleGetPrompt) }) {
				break
			}
		}
	}
	if kinds&(kindResources|kindTemplates) != 0 {
		done := false
		for _, uri := range slices.Sorted(maps.Keys(c.resOwner)) {
			if def := c.resources[uri]; c.resOwner[uri] == b.name && def != nil &&
				again("resource", uri, s.reg.resources, func() { s.server.AddResource(def, s.handleReadResource) }) {
				done = true
				break
			}
		}
		for _, tmpl := range slices.Sorted(maps.Keys(c.tmplOwner)) {
			if done {
				break
			}
			if def := c.templates[tmpl]; c.tmplOwner[tmpl] == b.name && def != nil &&
				again("resource template", tmpl, s.reg.templates, func() { s.server.AddResourceTemplate(def, s.handleReadResource) }) {
				done = true
			}
		}
	}
}

// listChangedMiddleware holds back the list_changed notifications that a
// session must not get yet, and coalesces the rest (see the top of this file).
func (s *Server) listChangedMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
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
			if s.isClosed() {
				return
			}
			ctx, cancel := context.WithTimeout(s.life, 10*time.Second)
			defer cancel()
			if _, err := next(ctx, method, req); err != nil {
				s.log.Debug("sending list_changed", "method", method, "err", err)
			}
		})
		return nil, nil
	}
}
