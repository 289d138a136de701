package proxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/session"
)

// identityMiddleware puts the identity of each request (from the HTTP
// request that carried it) on the handler's context, for the audit line,
// status and, later, policy (proxy/session).
func (s *Server) identityMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ctx = session.WithIdentity(ctx, req)
		return next(ctx, method, req)
	}
}
