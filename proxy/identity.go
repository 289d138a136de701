package proxy

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// identity is who an HTTP request comes from, as HTTPOptions.Authenticate
// put it on the request (the SDK's auth.TokenInfo): the zero identity
// without authentication (stdio, or HTTP without it).
type identity struct {
	user    string   // TokenInfo.UserID: what a session is bound to
	subject string   // Extra["subject"], else user
	groups  []string // Extra["groups"]
}

// Keys of auth.TokenInfo.Extra read here; internal/auth writes them.
const (
	extraSubject = "subject"
	extraGroups  = "groups"
)

func identityOf(ti *auth.TokenInfo) identity {
	if ti == nil {
		return identity{}
	}
	id := identity{user: ti.UserID, subject: ti.UserID}
	if s, ok := ti.Extra[extraSubject].(string); ok && s != "" {
		id.subject = s
	}
	id.groups, _ = ti.Extra[extraGroups].([]string)
	return id
}

// ownerOf is who an HTTP request to a session must come from: its
// connection's peer, and its authenticated user.
func ownerOf(r *http.Request) peer {
	p := peerOf(r)
	p.user = identityOf(auth.TokenInfoFromContext(r.Context())).user
	return p
}

// identityCtxKey is the context key of a request's identity inside the MCP
// server (set by identityMiddleware).
type identityCtxKey struct{}

// identityMiddleware puts the identity of each request (from the HTTP
// request that carried it) on the handler's context, for the audit line,
// status and, later, policy.
func (s *Server) identityMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			ctx = context.WithValue(ctx, identityCtxKey{}, identityOf(ex.TokenInfo))
		}
		return next(ctx, method, req)
	}
}

// identityFrom returns the identity identityMiddleware put on ctx.
func identityFrom(ctx context.Context) identity {
	id, _ := ctx.Value(identityCtxKey{}).(identity)
	return id
}
