package proxy

import (
	"context"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/relay"
)

// Which downstream list_changed notifications are sent, and when, is decided
// by proxy/relay (listchanged.go there): a session is told of a kind once it
// listed it (or listens for it), coalesced per kind and session. This file
// keeps what needs the root: the list handlers' bookkeeping (listing), and
// passing an upstream's list_changed on by re-registering one of its entries
// with the SDK (relayListChanged), which reads the catalog and the registry.

// catalogKind is one catalog a client lists and is notified about
// (relay.CatalogKind).
type catalogKind = relay.CatalogKind

const (
	catTools        = relay.CatTools
	catPrompts      = relay.CatPrompts
	catResources    = relay.CatResources // resources and resource templates share one notification
	numCatalogKinds = relay.NumCatalogKinds
)

// listing handles a downstream list request of kind k: it records that the
// session listed (before the list is computed, so a change made while it is
// computed is still notified) and waits, bounded by FirstListWait, for the
// upstreams' initial start.
func (s *Server) listing(ctx context.Context, req mcp.Request, k catalogKind) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss != nil {
		s.relay.MarkListed(ss, k)
	}
	s.waitListable(ctx, ss, clientOf(ctx, ss, nil).Name)
	if ss != nil {
		s.relay.Saw(ss, k)
	}
}

// whenSessionEnds runs f once ss has ended, unless the proxy closes first
// (then its state goes with it).
func (s *Server) whenSessionEnds(ss *mcp.ServerSession, f func()) {
	s.run.wg.Add(1)
	go func() {
		defer s.run.wg.Done()
		done := make(chan struct{})
		go func() { _ = ss.Wait(); close(done) }()
		select {
		case <-done:
			f()
		case <-s.run.closed:
		}
	}()
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
	s.builder.catMu.Lock()
	defer s.builder.catMu.Unlock()
	c := s.catalog.Load()
	if c == nil || s.isClosed() {
		return
	}
	again := func(kind, key string, reg map[string]regEntry, add func()) bool {
		if _, ok := reg[key]; !ok {
			return false // not registered: nothing of it is listed
		}
		// Passed on however late a session's last list (relay's listedKinds).
		switch kind {
		case "tool":
			s.relay.Changed(catTools)
		case "prompt":
			s.relay.Changed(catPrompts)
		default:
			s.relay.Changed(catResources)
		}
		if err := catchPanic(add); err != nil {
			s.log.Warn(kind+" rejected on re-registering; list_changed not passed on", "name", key, "err", err)
		}
		return true
	}
	if kinds&kindTools != 0 {
		for _, t := range l.tools {
			exposed, ok := c.Tools.Exposed(b.name, t.Name)
			if def := c.ToolDefs[exposed]; ok && def != nil &&
				again("tool", exposed, s.builder.reg.tools, s.notifyToolsChanged) {
				break
			}
		}
	}
	if kinds&kindPrompts != 0 {
		for _, p := range l.prompts {
			exposed, ok := c.Prompts.Exposed(b.name, p.Name)
			if def := c.PromptDefs[exposed]; ok && def != nil &&
				again("prompt", exposed, s.builder.reg.prompts, func() { s.server.AddPrompt(def, s.handleGetPrompt) }) {
				break
			}
		}
	}
	if kinds&(kindResources|kindTemplates) != 0 {
		done := false
		for _, uri := range slices.Sorted(maps.Keys(c.ResOwner)) {
			if def := c.Resources[uri]; c.ResOwner[uri] == b.name && def != nil &&
				again("resource", uri, s.builder.reg.resources, func() { s.server.AddResource(def, s.handleReadResource) }) {
				done = true
				break
			}
		}
		for _, tmpl := range slices.Sorted(maps.Keys(c.TmplOwner)) {
			if done {
				break
			}
			if def := c.Templates[tmpl]; c.TmplOwner[tmpl] == b.name && def != nil &&
				again("resource template", tmpl, s.builder.reg.templates, func() { s.server.AddResourceTemplate(def, s.handleReadResource) }) {
				done = true
			}
		}
	}
}
