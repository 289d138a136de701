package proxy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/naming"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/session"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
	case <-s.listable:
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

// rpcError keeps an upstream JSON-RPC error's code and data; other errors
// become internal errors that name the server.
func rpcError(server string, err error) error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: %v", server, err)}
}

func (s *Server) readResource(ctx context.Context, ss *mcp.ServerSession, p *mcp.ReadResourceParams) (res *mcp.ReadResourceResult, err error) {
	start := time.Now()
	rec := observe.Record{Method: "resources/read", Exposed: p.URI, Decision: "denied", Outcome: "not found", Identity: session.IdentityFrom(ctx).Subject}
	if s.obs.Records() {
		defer func() {
			if err != nil && rec.Outcome == "" {
				rec.Outcome, rec.Error = "error", err.Error()
			} else if rec.Outcome == "" {
				rec.Outcome = "ok"
				for _, c := range res.Contents {
					if c != nil {
						rec.ResultBytes += len(c.Text) + len(c.Blob)
					}
				}
			}
			rec.Catalog = s.sessionMode(ctx, ss, nil, s.catalog.Load(), false)
			recordSession(&rec, ss)
			s.obs.Record(rec, start, nil)
		}()
	}
	s.waitReady(ctx)
	c := s.catalog.Load()
	server, original, uri, ok, err := c.ResolveResource(p.URI)
	if err != nil {
		rec.Outcome = "refused: no canonical URI"
		return nil, err
	}
	if !ok {
		return nil, mcp.ResourceNotFoundError(p.URI)
	}
	who := session.IdentityFrom(ctx).Policy()
	d := c.ResourceAllowed(server, original, uri, who)
	rec.Exposed, rec.Server, rec.Original = uri, server, original
	if rec.Decision, rec.Rule = observe.DecisionWords(d); !d.Visible {
		rec.Outcome = "denied"
		return nil, mcp.ResourceNotFoundError(p.URI) // a denied resource does not exist for the caller
	}
	rec.Outcome = ""
	cs, b, err := s.upFor(ctx, server)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if iso, err := s.sessionUpstream(ctx, b, ss); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	} else if iso != nil {
		cs = iso.Session()
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
	defer cancel()
	defer b.Enter(ctx, ss)() // what the server asks meanwhile may be this read's (relay.go)
	fwd := *p
	fwd.URI = original
	ctx, fwd.Meta = s.obs.TraceMeta(ctx, fwd.Meta)
	res, err = cs.ReadResource(ctx, &fwd)
	if err != nil {
		return nil, rpcError(server, err)
	}
	if res.CacheScope == "" {
		// An upstream that sent no cacheScope means the protocol's
		// default; the field is required on the wire, so say it rather
		// than send it empty (as the SDK does for the results it builds).
		res.CacheScope = "public"
	}
	// An entry may name another resource (a folder read listing its
	// files): each is decided like a read of its own URI.
	kept := res.Contents[:0]
	labelled := false // a text was labelled as data (the first gets the preamble)
	for _, rc := range res.Contents {
		if rc == nil {
			continue
		}
		out, ok := c.UpstreamResource(server, rc.URI, who)
		if !ok {
			continue
		}
		if d.Label && rc.Text != "" && !strings.HasPrefix(rc.URI, "ui://") {
			// ui:// is an app's HTML, which the host renders and the model does not read.
			rc.Text = s.guard.LabelText(rc.Text, server, "uri", out, !labelled)
			labelled = true
		}
		rc.URI = out
		kept = append(kept, rc)
	}
	if len(kept) == 0 && len(res.Contents) > 0 {
		rec.Outcome = "denied"
		return nil, mcp.ResourceNotFoundError(p.URI)
	}
	if len(kept) < len(res.Contents) || c.Rules.GuardsResources(server) {
		// What this read shows depends on the policy, as a narrowed list
		// does: no shared cache may serve it to another client. (A client
		// of the initialize era gets no cache fields: legacyCacheMiddleware.)
		res.CacheScope = era.ScopePrivate
	}
	res.Contents = kept
	return res, nil
}

// handleReadResource satisfies the SDK's registration API; reads are answered
// by routingMiddleware before they reach it.
func (s *Server) handleReadResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return s.readResource(ctx, req.Session, req.Params)
}

// codeRateLimited is the JSON-RPC error code of a prompts/get refused by a
// rate limit (a tools/call gets an isError result instead): an
// implementation-defined server error.
const codeRateLimited = -32000

func (s *Server) handleGetPrompt(ctx context.Context, req *mcp.GetPromptRequest) (res *mcp.GetPromptResult, err error) {
	start := time.Now()
	id := session.RequestIdentity(ctx, req)
	who := id.Policy()
	rec := observe.Record{Method: "prompts/get", Exposed: req.Params.Name, Decision: "allowed", Identity: id.Subject}
	if s.obs.Records() {
		defer func() {
			if err != nil {
				rec.Outcome, rec.Error = cmp.Or(rec.Outcome, "error"), err.Error()
			} else {
				rec.Outcome = "ok"
				if b, merr := json.Marshal(res); merr == nil {
					rec.ResultBytes = len(b)
				}
			}
			rec.Catalog = s.sessionMode(ctx, req.Session, nil, s.catalog.Load(), false)
			recordSession(&rec, req.Session)
			s.obs.Record(rec, start, nil)
		}()
	}
	c := s.catalog.Load()
	e, d, ok := c.VisiblePrompt(req.Params.Name, who)
	if !ok {
		rec.Decision = "denied"
		if msg, held := c.HeldMessage("prompt", req.Params.Name); held {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", req.Params.Name)}
	}
	rec.Server, rec.Original = e.Server, e.Original
	rec.Decision, rec.Rule = observe.DecisionWords(d)
	if r := d.Limits.Rate; !r.IsZero() {
		// Buckets are per exposed item; a prompt's never shares a tool's.
		wait, err := s.guard.TakeRate(ctx, "prompt\x00"+req.Params.Name, d.Limits, id.Key)
		if err != nil {
			rec.Outcome = "rate limit unchecked"
			return nil, &jsonrpc.Error{Code: codeRateLimited, Message: fmt.Sprintf(
				"rate limit: prompt %s allows %s (%s), and the count shared by the replicas could not be checked (%v); nothing was sent upstream. Retry in a few seconds",
				req.Params.Name, r, d.Limits.RateSource, err)}
		}
		if wait > 0 {
			rec.Outcome = "rate limited"
			return nil, &jsonrpc.Error{Code: codeRateLimited, Message: fmt.Sprintf(
				"rate limit: prompt %s allows %s (%s); nothing was sent upstream. Retry in %s",
				req.Params.Name, r, d.Limits.RateSource, (wait + time.Millisecond).Round(time.Second/10))}
		}
	}
	cs, b, err := s.upFor(ctx, e.Server)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if iso, err := s.sessionUpstream(ctx, b, req.Session); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	} else if iso != nil {
		cs = iso.Session()
	}
	timeout := b.cfg.CallTimeout
	if t := d.Limits.CallTimeout; t > 0 && t < timeout {
		timeout = t
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer b.Enter(ctx, req.Session)() // what the server asks meanwhile may be this request's (relay.go)
	fwd := *req.Params
	fwd.Name = e.Original
	ctx, fwd.Meta = s.obs.TraceMeta(ctx, fwd.Meta)
	res, err = cs.GetPrompt(ctx, &fwd)
	if err != nil {
		return nil, rpcError(e.Server, err)
	}
	if c.FiltersResources(e.Server) {
		for _, m := range res.Messages {
			if m != nil {
				m.Content = filterContent(m.Content, func(u string) (string, bool) { return c.UpstreamResource(e.Server, u, who) })
			}
		}
	}
	return res, nil
}

// filterContent rewrites the URI of a resource link or embedded resource,
// or replaces the block by a note when filter says it must be withheld
// (naming.FilterContentResources is the same for raw results).
func filterContent(ct mcp.Content, filter func(string) (string, bool)) mcp.Content {
	var uri *string
	switch ct := ct.(type) {
	case *mcp.ResourceLink:
		uri = &ct.URI
	case *mcp.EmbeddedResource:
		if ct.Resource == nil {
			uri = new(string)
		} else {
			uri = &ct.Resource.URI
		}
	default:
		return ct
	}
	out, keep := filter(*uri)
	if !keep {
		return &mcp.TextContent{Text: naming.WithheldNote}
	}
	*uri = out
	return ct
}

// handleComplete routes completion/complete by its ref: a prompt by exposed
// name, a resource template by URI. An upstream without completions gives an
// empty answer, so one server never breaks completion for the others.
func (s *Server) handleComplete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	s.waitReady(ctx)
	c := s.catalog.Load()
	if req.Params == nil || req.Params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	fwd := *req.Params
	ref := *req.Params.Ref
	fwd.Ref = &ref
	var server string
	switch ref.Type {
	case "ref/prompt":
		e, _, ok := c.VisiblePrompt(ref.Name, session.RequestIdentity(ctx, req).Policy())
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", ref.Name)}
		}
		server, ref.Name = e.Server, e.Original
	case "ref/resource":
		srv, original, ok := c.URIs.Inward(ref.URI)
		if !ok {
			if owner, found := c.TmplOwner[ref.URI]; found {
				srv, original, ok = owner, ref.URI, true
			} else if owner, found := c.ResOwner[ref.URI]; found {
				srv, original, ok = owner, ref.URI, true
			}
		}
		if !ok || !c.Rules.Decide(policy.Item{Kind: policy.Template, Server: srv, Original: original, Exposed: ref.URI, Who: session.RequestIdentity(ctx, req).Policy()}).Visible {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource template %q", ref.URI)}
		}
		server, ref.URI = srv, original
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown ref type %q", ref.Type)}
	}
	cs, b, err := s.upFor(ctx, server)
	if err != nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	if caps := b.Capabilities(); caps == nil || caps.Completions == nil {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.cfg.CallTimeout)
	defer cancel()
	defer b.Enter(ctx, req.Session)() // what the server asks meanwhile may be this request's (relay.go)
	res, err := cs.Complete(ctx, &fwd)
	if err != nil {
		return nil, rpcError(server, err)
	}
	return res, nil
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
