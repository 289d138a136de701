package session

import (
	"context"
	"net/http"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
)

// Identity is who an HTTP request comes from, as HTTPOptions.Authenticate
// put it on the request (the SDK's auth.TokenInfo): the zero Identity
// without authentication (stdio, or HTTP without it).
type Identity struct {
	User    string   // TokenInfo.UserID: what a session is bound to
	Subject string   // Extra["subject"], else User
	Groups  []string // Extra["groups"]
	Method  string   // Extra["method"]: "jwt" or "api_key"
}

// Keys of auth.TokenInfo.Extra read here; internal/auth writes them.
const (
	ExtraSubject = "subject"
	ExtraGroups  = "groups"
	ExtraMethod  = "method"
	MethodAPIKey = "api_key"
)

// IdentityOf is the identity ti names.
func IdentityOf(ti *auth.TokenInfo) Identity {
	if ti == nil {
		return Identity{}
	}
	id := Identity{User: ti.UserID, Subject: ti.UserID}
	if s, ok := ti.Extra[ExtraSubject].(string); ok && s != "" {
		id.Subject = s
	}
	groups, _ := ti.Extra[ExtraGroups].([]string)
	for _, g := range groups {
		// A group that holds a control character can equal no who entry
		// (the config refuses them), and a NUL would blur Key().
		if g != "" && !strings.ContainsFunc(g, unicode.IsControl) {
			id.Groups = append(id.Groups, g)
		}
	}
	id.Method, _ = ti.Extra[ExtraMethod].(string)
	return id
}

// Policy is the identity as the policy decides on it: an API key's name,
// or a token's subject, and the groups. The zero identity is anonymous.
func (id Identity) Policy() policy.Identity {
	if id.User == "" {
		return policy.Identity{}
	}
	out := policy.Identity{Groups: id.Groups}
	if id.Method == MethodAPIKey {
		out.Key = id.Subject
	} else {
		out.User = id.Subject
	}
	return out
}

// Key is the identity as one string, for the per-identity rate and spend
// counts and view caches: TokenInfo.UserID (which tells a key from a token
// and one issuer's subject from another's) and the groups, each after a
// NUL, which no claim value the policy matches holds. "" is anonymous.
func (id Identity) Key() string {
	if id.User == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString(id.User)
	for _, g := range id.Groups {
		b.WriteByte(0)
		b.WriteString(g)
	}
	return b.String()
}

// OwnerOf is who an HTTP request to a session must come from: its
// connection's peer, and its authenticated user.
func OwnerOf(r *http.Request) Peer {
	p := PeerOf(r)
	p.User = IdentityOf(auth.TokenInfoFromContext(r.Context())).User
	return p
}

// identityCtxKey is the context key of a request's identity inside the MCP
// server (set by the proxy's identity middleware, with WithIdentity).
type identityCtxKey struct{}

// WithIdentity puts the identity of req on ctx, and its validated token
// (for token exchange only: SubjectToken).
func WithIdentity(ctx context.Context, req mcp.Request) context.Context {
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		ctx = WithTokenInfo(ctx, ex.TokenInfo)
	}
	return ctx
}

// WithTokenInfo puts the identity ti names on ctx, and its validated token
// (for token exchange only: SubjectToken); ti is not nil.
func WithTokenInfo(ctx context.Context, ti *auth.TokenInfo) context.Context {
	ctx = context.WithValue(ctx, identityCtxKey{}, IdentityOf(ti))
	if tok, ok := ti.Extra[extraSubjectToken].(string); ok && tok != "" {
		ctx = context.WithValue(ctx, subjectTokenKey{}, tok)
	}
	return ctx
}

// extraSubjectToken is internal/auth's ExtraSubjectToken.
const extraSubjectToken = "subject_token"

type subjectTokenKey struct{}

// SubjectToken is the caller's validated downstream token on ctx; ""
// if none (an API key, or no authentication). Only token exchange sends
// it anywhere: to the identity provider, never to an upstream.
func SubjectToken(ctx context.Context) string {
	tok, _ := ctx.Value(subjectTokenKey{}).(string)
	return tok
}

// RequestIdentity is the identity of req: from ctx, else from req itself
// (for the SDK's callbacks, whose context may not have passed through
// the identity middleware).
func RequestIdentity(ctx context.Context, req mcp.Request) Identity {
	if id, ok := ctx.Value(identityCtxKey{}).(Identity); ok {
		return id
	}
	if req != nil {
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			return IdentityOf(ex.TokenInfo)
		}
	}
	return Identity{}
}

// IdentityFrom returns the identity WithIdentity put on ctx.
func IdentityFrom(ctx context.Context) Identity {
	id, _ := ctx.Value(identityCtxKey{}).(Identity)
	return id
}
