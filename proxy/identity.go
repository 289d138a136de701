package proxy

import (
	"context"
	"net/http"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
)

// identity is who an HTTP request comes from, as HTTPOptions.Authenticate
// put it on the request (the SDK's auth.TokenInfo): the zero identity
// without authentication (stdio, or HTTP without it).
type identity struct {
	user    string   // TokenInfo.UserID: what a session is bound to
	subject string   // Extra["subject"], else user
	groups  []string // Extra["groups"]
	method  string   // Extra["method"]: "jwt" or "api_key"
}

// Keys of auth.TokenInfo.Extra read here; internal/auth writes them.
const (
	extraSubject = "subject"
	extraGroups  = "groups"
	extraMethod  = "method"
	methodAPIKey = "api_key"
)

func identityOf(ti *auth.TokenInfo) identity {
	if ti == nil {
		return identity{}
	}
	id := identity{user: ti.UserID, subject: ti.UserID}
	if s, ok := ti.Extra[extraSubject].(string); ok && s != "" {
		id.subject = s
	}
	groups, _ := ti.Extra[extraGroups].([]string)
	for _, g := range groups {
		// A group that holds a control character can equal no who entry
		// (the config refuses them), and a NUL would blur key().
		if g != "" && !strings.ContainsFunc(g, unicode.IsControl) {
			id.groups = append(id.groups, g)
		}
	}
	id.method, _ = ti.Extra[extraMethod].(string)
	return id
}

// policy is the identity as the policy decides on it: an API key's name,
// or a token's subject, and the groups. The zero identity is anonymous.
func (id identity) policy() policy.Identity {
	if id.user == "" {
		return policy.Identity{}
	}
	out := policy.Identity{Groups: id.groups}
	if id.method == methodAPIKey {
		out.Key = id.subject
	} else {
		out.User = id.subject
	}
	return out
}

// key is the identity as one string, for the per-identity rate and spend
// counts and view caches: TokenInfo.UserID (which tells a key from a token
// and one issuer's subject from another's) and the groups, each after a
// NUL, which no claim value the policy matches holds. "" is anonymous.
func (id identity) key() string {
	if id.user == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(id.user)
	for _, g := range id.groups {
		b.WriteByte(0)
		b.WriteString(g)
	}
	return b.String()
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
		ctx = withIdentity(ctx, req)
		return next(ctx, method, req)
	}
}

// withIdentity puts the identity of req on ctx, and its validated token
// (for token exchange only: subjectTokenFrom).
func withIdentity(ctx context.Context, req mcp.Request) context.Context {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		ctx = context.WithValue(ctx, identityCtxKey{}, identityOf(ex.TokenInfo))
		if tok, ok := ex.TokenInfo.Extra[extraSubjectToken].(string); ok && tok != "" {
			ctx = context.WithValue(ctx, subjectTokenKey{}, tok)
		}
	}
	return ctx
}

// extraSubjectToken is internal/auth's ExtraSubjectToken.
const extraSubjectToken = "subject_token"

type subjectTokenKey struct{}

// subjectTokenFrom is the caller's validated downstream token on ctx; ""
// if none (an API key, or no authentication). Only token exchange sends
// it anywhere: to the identity provider, never to an upstream.
func subjectTokenFrom(ctx context.Context) string {
	tok, _ := ctx.Value(subjectTokenKey{}).(string)
	return tok
}

// requestIdentity is the identity of req: from ctx, else from req itself
// (for the SDK's callbacks, whose context may not have passed through
// identityMiddleware).
func requestIdentity(ctx context.Context, req mcp.Request) identity {
	if id, ok := ctx.Value(identityCtxKey{}).(identity); ok {
		return id
	}
	if req != nil {
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			return identityOf(ex.TokenInfo)
		}
	}
	return identity{}
}

// identityFrom returns the identity identityMiddleware put on ctx.
func identityFrom(ctx context.Context) identity {
	id, _ := ctx.Value(identityCtxKey{}).(identity)
	return id
}
