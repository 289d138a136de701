package proxy

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
)

// The SDK path's era translation: the only root file that branches on the
// client's era. The SDK's middleware chain is the path both faces share
// (every HTTP request, and the stdio frames the lean loop passes on): here a
// request of either era is made era-neutral before routingMiddleware sees
// it, and its result is given what the client's era has (proxy/era knows
// how), so that route, the catalog, listing and the call pipeline never ask
// which era a client speaks. The lean paths carry the same translation on
// bytes (listlean.go's head, the faces' era.CallResult).

// modernSession reports whether ss speaks 2026-07-28: over stdio once
// server/discover or the first modern request set it up, over HTTP every
// stateless per-request session of a modern request.
func modernSession(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion >= era.Version
}

// eraMiddleware translates one request on the SDK path between the client's
// era and the era-neutral routingMiddleware inside it. A modern request: the
// first one learns the client (over stdio it fixes what upstreams are
// offered, as initialize does for a legacy client), a call's _meta loses the
// era's own keys, and the result gets resultType and Manifold's serverInfo.
// A legacy request: a read or prompt relayed from a modern upstream loses
// the 2026-07-28 fields.
func (s *Server) eraMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		if !modernSession(ss) {
			res, err := next(ctx, method, req)
			if err != nil || res == nil {
				return res, err
			}
			switch method {
			case "resources/read", "prompts/get":
				// A modern upstream's answer, relayed: a legacy client
				// gets it without the 2026-07-28 fields.
				return era.LegacyResult(res), nil
			}
			return res, nil
		}
		// A modern client declares its capabilities on every request; over
		// stdio the first one fixes what upstreams are offered, as
		// initialize does for a legacy client.
		s.learnClient(clientCapsOf(ss), true)
		if r, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && r.Params != nil {
			// The era's own _meta keys describe this request, not
			// the upstream's; the upstream face writes its own.
			p := *r.Params
			p.Meta = era.StripMeta(p.Meta)
			req = &mcp.CallToolRequest{Session: r.Session, Params: &p, Extra: r.Extra}
		}
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		if r, ok := res.(*rawCallResult); ok {
			// A call answered with the upstream's bytes (httplean.go):
			// made strict on the bytes, as the lean paths do.
			r.raw = era.CallResult(r.raw, s.serverInfo)
			return r, nil
		}
		return era.ModernResult(res, s.serverInfo), nil
	}
}

// learnDiscovered learns the client of ss once server/discover set it up:
// discover is of the 2026-07-28 era.
func (s *Server) learnDiscovered(ss *mcp.ServerSession) {
	s.learnClient(clientCapsOf(ss), true)
}

// setCacheable gives a modern request's list, read and discover answers
// their ttlMs and cacheScope (ServerOptions.SetCacheable, cacheFields).
// Legacy clients get what the SDK gives them today, untouched.
func (s *Server) setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if !modernSession(ss) {
		return
	}
	s.cacheFields(req, c)
}

// legacyCacheMiddleware takes the 2026-07-28 cache fields (ttlMs,
// cacheScope) out of the answers to a session of the initialize era: the
// SDK's list and read results always encode them. Outermost, after
// masking, which decodes results into their own types.
func (s *Server) legacyCacheMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil || res == nil || !legacySession(req) {
			return res, err
		}
		switch r := res.(type) {
		case *rawToolList:
			r.cacheless = true // its head is encoded without them
			return r, nil
		case mcp.CacheableResult:
			return cacheless{r}, nil
		}
		return res, nil
	}
}

// legacySession reports whether req comes from a session that
// initialized at a version of the initialize era.
func legacySession(req mcp.Request) bool {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	return ip != nil && ip.ProtocolVersion < era.Version
}

// cacheless is a result encoded without its cache fields.
type cacheless struct{ mcp.CacheableResult }

func (c cacheless) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(c.CacheableResult)
	if err != nil {
		return nil, err
	}
	return era.DropCacheFields(b), nil
}
