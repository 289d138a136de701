package proxy

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
)

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
