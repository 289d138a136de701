package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/era"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientCapsOf returns the capabilities the client of ss declared: in
// initialize (legacy), or in the _meta of the request that set the session
// up (modern; the SDK converts the wire shape). Nil if none are known.
func clientCapsOf(ss *mcp.ServerSession) *mcp.ClientCapabilities {
	if ss == nil {
		return nil
	}
	if ip := ss.InitializeParams(); ip != nil {
		return ip.Capabilities
	}
	return nil
}

// implementation is the proxy's identity downstream (initialize's
// serverInfo, and _meta serverInfo of every modern result).
func implementation() *mcp.Implementation {
	return &mcp.Implementation{Name: "manifold", Title: "Manifold", Version: Version}
}

func (s *Server) newMCPServer() *mcp.Server {
	s.serverInfo, _ = json.Marshal(implementation()) // a struct of strings always encodes
	srv := mcp.NewServer(implementation(), &mcp.ServerOptions{
		Logger:                    slog.New(quietHandler{s.log.Handler(), slog.LevelWarn}).With("component", "mcp"),
		Capabilities:              serverCapabilities(),
		SupportedProtocolVersions: era.Versions,
		SetCacheable:              s.setCacheable,
		CompletionHandler:         s.handleComplete,
		RootsListChangedHandler:   s.relay.RootsChanged, //lint:ignore SA1019 roots are part of the protocol versions the proxy serves
		SubscribeHandler:          s.relay.Subscribe,
		UnsubscribeHandler:        s.relay.Unsubscribe,
	})
	srv.AddReceivingMiddleware(s.identityMiddleware, s.eraMiddleware, s.routingMiddleware)
	srv.AddSendingMiddleware(s.relay.ListChangedMiddleware)
	if s.obs.Tracing() || s.obs.Metrics() != nil {
		srv.AddReceivingMiddleware(s.telemetryMiddleware)
	}
	// Outermost (added last): what reaches a client is masked last.
	srv.AddReceivingMiddleware(s.guard.MaskingMiddleware)
	srv.AddSendingMiddleware(s.guard.MaskingSender)
	srv.AddReceivingMiddleware(s.legacyCacheMiddleware) // sdkface.go: encoding only
	return srv
}

// routingMiddleware makes list requests wait (briefly, FirstListWait) for the
// initial start of the upstreams and records that the session listed, makes
// requests by name wait (FirstListTimeout) for a name that may be about to
// appear, and routes resources/read
// by URI so that URIs which no list announced (resource links in tool results)
// reach their server. It sees requests and results of no era: eraMiddleware
// (sdkface.go), outside it, translates them.
func (s *Server) routingMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		return s.route(ctx, next, method, req)
	}
}

// route is routingMiddleware for one request.
func (s *Server) route(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	switch method {
	case "server/discover":
		res, err := next(ctx, method, req)
		if dr, ok := res.(*mcp.DiscoverResult); ok && err == nil {
			// discover set the session up: learn the client now.
			ss, _ := req.GetSession().(*mcp.ServerSession)
			s.learnDiscovered(ss)
			if text := s.instructions(ctx, ss, clientOf(ctx, ss, nil).Name); text != "" {
				out := *dr
				out.Instructions = text
				return &out, nil
			}
		}
		return res, err
	case "initialize":
		return s.initialize(ctx, next, method, req)
	case "tools/call":
		// Every call is routed by the catalog, audited and answered
		// here, as on the stdio lean path: the SDK would answer a name
		// it has not registered (unknown, hidden, or of a server still
		// starting) itself, unaudited.
		if r, ok := req.(*mcp.CallToolRequest); ok && r.Params != nil {
			return s.serveCallTool(ctx, r)
		}
	case "prompts/get":
		// A name the client learned earlier may belong to a server that
		// is still starting; the SDK only knows registered names.
		s.waitReady(ctx)
	case "tools/list":
		s.listing(ctx, req, catTools)
		var res mcp.Result
		var err error
		ss, _ := req.GetSession().(*mcp.ServerSession)
		c := s.catalog.Load()
		search := s.sessionMode(ctx, ss, listMeta(req), c, true) == ModeSearch
		key, keep := s.listKeyFor(ctx, req, c, search) // listbytes.go
		keep = keep && !s.typed
		if keep {
			if res, ok := c.preparedListFor(key); ok {
				return res, nil
			}
		}
		if search {
			// A search-mode session lists the search surface; the
			// SDK's registry holds the full catalog, every session's.
			// Its cache fields are settled as the SDK settles its own
			// lists' (resolveCacheable).
			lr := s.surfaceList(c)
			s.setCacheable(ctx, req, &lr.Cacheable)
			if lr.CacheScope == "" {
				lr.CacheScope = era.ScopePublic
			}
			res = lr
		} else {
			// The catalog's own list (toollist.go), its cache fields
			// settled as the SDK settles its lists'.
			var cursor string
			if r, ok := req.(*mcp.ListToolsRequest); ok && r.Params != nil {
				cursor = r.Params.Cursor
			}
			lr, err := c.ToolPage(cursor)
			if err != nil {
				return nil, err
			}
			s.setCacheable(ctx, req, &lr.Cacheable)
			if lr.CacheScope == "" {
				lr.CacheScope = era.ScopePublic
			}
			res = lr
		}
		lr, ok := res.(*mcp.ListToolsResult)
		if !ok || err != nil {
			return res, err
		}
		lr = s.narrowResult(ctx, req, lr).(*mcp.ListToolsResult)
		lr = era.ToolList(lr, era.SessionVersion(req.GetSession()), s.modernToolList)
		if !keep {
			return lr, nil
		}
		return c.prepareList(key, lr), nil
	case "prompts/list", "resources/list", "resources/templates/list":
		kind := catPrompts
		if method != "prompts/list" {
			kind = catResources
		}
		s.listing(ctx, req, kind)
		res, err := next(ctx, method, req)
		if err != nil || res == nil {
			return res, err
		}
		// Narrowed to what the caller may see (who.go).
		return s.narrowResult(ctx, req, res), nil
	case "resources/read":
		if r, ok := req.(*mcp.ReadResourceRequest); ok {
			return s.readResource(ctx, r.Session, r.Params)
		}
	case "logging/setLevel":
		s.relay.SetLogLevel(ctx, req)
	case "subscriptions/listen":
		return s.relay.ServeListen(ctx, next, method, req)
	}
	return next(ctx, method, req)
}

// cacheFields decides ttlMs and cacheScope for a list, read and discover
// answer (setCacheable gives them to a modern request's; it runs under the SDK
// server's lock, so this reads only the catalog).
func (s *Server) cacheFields(req mcp.Request, c *mcp.Cacheable) {
	// Cacheable once every server's catalog is known, cached or live: a
	// later change is announced (list_changed) like any other.
	ready := false
	select {
	case <-s.run.listable:
		ready = true
	default:
	}
	cat := s.catalog.Load()
	switch req.(type) {
	case *mcp.ListToolsRequest:
		// A list that depends on the client (its catalog mode) is
		// no shared cache's to serve.
		c.TTLMs, c.CacheScope = cat.listCache(ready)
	case *mcp.ListPromptsRequest:
		c.TTLMs, c.CacheScope = era.ListCache(cat.Narrowed[catPrompts] || cat.Varies[catPrompts], ready)
	case *mcp.ListResourcesRequest:
		c.TTLMs, c.CacheScope = era.ListCache(cat.NarrowedResources || cat.VariesResources, ready)
	case *mcp.ListResourceTemplatesRequest:
		c.TTLMs, c.CacheScope = era.ListCache(cat.NarrowedTemplates || cat.VariesTemplates, ready)
	case *mcp.ReadResourceRequest:
		// The upstream's answer says how long its content keeps; an
		// upstream of the legacy era says nothing (0: re-read).
	default: // server/discover: versions and capabilities
		c.TTLMs, c.CacheScope = era.ListCache(false, ready)
	}
}

// upFor returns the running upstream session of server, or an error that says
// why there is none.
func (s *Server) upFor(ctx context.Context, server string) (*mcp.ClientSession, *backend, error) {
	b := s.gen.Load().byName[server]
	if b == nil {
		return nil, nil, fmt.Errorf("no server %q", server)
	}
	b.EnsureUp(ctx)
	st, up, _ := b.Snapshot()
	if st != stateUp || up == nil {
		return nil, b, errors.New(b.Unavailable())
	}
	return up.Session(), b, nil
}

// readResource answers a resources/read (proxy/route).
func (s *Server) readResource(ctx context.Context, ss *mcp.ServerSession, p *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return s.pipeline.ReadResource(ctx, ss, p)
}

// handleReadResource satisfies the SDK's registration API; reads are answered
// by routingMiddleware before they reach it.
func (s *Server) handleReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return s.readResource(ctx, req.Session, req.Params)
}

// handleGetPrompt answers a prompts/get (proxy/route).
func (s *Server) handleGetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return s.pipeline.GetPrompt(ctx, req)
}

// handleComplete answers a completion/complete (proxy/route).
func (s *Server) handleComplete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	return s.pipeline.Complete(ctx, req)
}

// resourceUpdated relays an upstream's resources/updated to the downstream
// sessions that subscribed, with the URI rewritten outward.
func (s *Server) resourceUpdated(ctx context.Context, b *backend, uri string) {
	c := s.catalog.Load()
	if canon, err := policy.CanonicalURI(uri); err == nil {
		uri = canon // as the subscription was recorded
	}
	_ = s.server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: c.URIs.Outward(b.name, uri)})
}
