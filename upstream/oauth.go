package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/manifold-mcp/manifold/internal/tokenstore"
)

// This file is the client side of a remote server protected by OAuth 2.1
// (auth = "oauth"): the stored credential of one identity (or the service
// credential) goes on every request through the SDK's auth.OAuthHandler
// hook of the streamable transport, it is refreshed with golang.org/x/oauth2
// keeping the RFC 8707 resource, and a 401 that no refresh cures becomes an
// *AuthError that tells the user which `manifold login` authorizes. Nothing
// here is interactive: login.go runs the browser flow.

// OAuth says which stored credential a remote server's requests carry.
type OAuth struct {
	// Store holds the credentials. Required.
	Store *tokenstore.Store
	// Identity is whose credential is used (such as "user:alice"); if
	// empty, the service credential.
	Identity string
	// Login is the command that authorizes, shown in errors. If empty,
	// "manifold login NAME" (with --as IDENTITY for an identity).
	Login string
	// StepUp, if set, runs a new login of identity asking for scopes (the
	// credential's and those the server demands) when the server answers
	// 403 insufficient_scope, after which the request is retried with the
	// new credential: for the interactive commands (manifold call, tools).
	// Unset while serving: the result then says to run Login.
	StepUp func(ctx context.Context, identity string, scopes []string) error
}

// maxStepUps bounds the step-up logins of one connection, so that a server
// that keeps asking (RFC 6750 insufficient_scope for a scope it never
// grants) does not loop.
const maxStepUps = 2

// ErrUnauthorized is matched (errors.Is) by an *AuthError: the server wants
// a credential that the proxy does not hold, or refused the one it holds.
var ErrUnauthorized = errors.New("not authorized")

// AuthError says that a remote server's request lacked a valid credential,
// and how to get one.
type AuthError struct {
	Server   string
	Identity string // "" for the service credential
	Reason   string // what happened, such as "no credential is stored"
	Login    string // the command that authorizes
	Hint     string // if set, what to do instead of running Login
	Err      error  // the cause, if any
}

func (e *AuthError) Error() string {
	if e.Hint != "" {
		return fmt.Sprintf("upstream %q: %s is not authorized: %s; %s", e.Server, e.whose(), e.Reason, e.Hint)
	}
	return fmt.Sprintf("upstream %q: %s is not authorized: %s; run `%s` to authorize", e.Server, e.whose(), e.Reason, e.Login)
}

func (e *AuthError) whose() string {
	if e.Identity == "" {
		return "the service credential"
	}
	if e.Hint != "" {
		return "the token of " + e.Identity
	}
	return fmt.Sprintf("the credential of %s", e.Identity)
}

// Is reports ErrUnauthorized.
func (e *AuthError) Is(target error) bool { return target == ErrUnauthorized }

// Unwrap returns the cause.
func (e *AuthError) Unwrap() error { return e.Err }

// LoginCommand is the command that authorizes identity ("" for the
// service credential) at server.
func LoginCommand(server, identity string) string {
	if identity == "" {
		return "manifold login " + server
	}
	return fmt.Sprintf("manifold login %s --as %s", server, shellQuote(identity))
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./-_", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// oauthHandler implements the SDK's auth.OAuthHandler for one connection:
// TokenSource gives the stored token (refreshed as it expires, each new one
// saved), and Authorize, after a 401, first tries a refresh or a credential
// saved since by a new login, and otherwise fails with an *AuthError.
type oauthHandler struct {
	server string
	o      OAuth
	client *http.Client // to the authorization server: never the MCP server's headers

	mu   sync.Mutex
	cred *tokenstore.Credential // guarded by mu
	ts   oauth2.TokenSource     // guarded by mu
	dead string                 // guarded by mu; why the credential is no longer any good
	ups  []string               // guarded by mu; the scope sets step-ups asked for
}

// newOAuthHandler loads the credential of o.Identity for server; base
// carries the requests to the authorization server.
func newOAuthHandler(server string, o OAuth, base http.RoundTripper) (*oauthHandler, error) {
	if o.Login == "" {
		o.Login = LoginCommand(server, o.Identity)
	}
	h := &oauthHandler{server: server, o: o}
	h.client = &http.Client{Transport: &resourceTransport{base: base}, Timeout: 30 * time.Second}
	if o.Store == nil {
		return nil, h.fail(`no token store is configured (set [tokens] key = "${file:token.key}" in the config)`, nil)
	}
	cred, err := o.Store.Load(server, o.Identity)
	if errors.Is(err, tokenstore.ErrNotFound) {
		return nil, h.fail("no credential is stored", nil)
	}
	if err != nil {
		return nil, h.fail(err.Error(), err)
	}
	h.adopt(cred)
	return h, nil
}

func (h *oauthHandler) fail(reason string, err error) *AuthError {
	return &AuthError{Server: h.server, Identity: h.o.Identity, Reason: reason, Login: h.o.Login, Err: err}
}

// adopt makes cred the handler's credential. Called with mu held or before
// the handler is shared.
func (h *oauthHandler) adopt(cred *tokenstore.Credential) {
	h.cred = cred
	h.dead = ""
	tok := &oauth2.Token{AccessToken: cred.AccessToken, TokenType: cred.TokenType, RefreshToken: cred.RefreshToken, Expiry: cred.Expiry}
	h.ts = h.source(tok)
}

// source is the token source of tok: x/oauth2's refresher, whose refresh
// requests resourceTransport gives the resource, and which saves every new
// token.
func (h *oauthHandler) source(tok *oauth2.Token) oauth2.TokenSource {
	cfg := h.config()
	// x/oauth2 keeps this context for every refresh: not a request's.
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.client)
	ctx = withResource(ctx, h.cred.Resource)
	return &savingSource{h: h, src: cfg.TokenSource(ctx, tok), last: tok.AccessToken}
}

func (h *oauthHandler) config() *oauth2.Config {
	return &oauth2.Config{
		ClientID:     h.cred.ClientID,
		ClientSecret: h.cred.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: h.cred.TokenURL, AuthStyle: oauth2.AuthStyle(h.cred.AuthStyle)},
		Scopes:       h.cred.Scopes,
	}
}

// TokenSource implements auth.OAuthHandler. Once the credential has been
// refused for good, each request rereads the store (a new login cures it)
// and otherwise fails at once, without reaching the server.
func (h *oauthHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead != "" && !h.reloadLocked("") {
		return nil, h.fail(h.dead, nil)
	}
	return h.ts, nil
}

// reloadLocked adopts the stored credential if it is not the one in use
// nor sent (a new login), and reports whether it did. Called with mu held.
func (h *oauthHandler) reloadLocked(sent string) bool {
	cred, err := h.o.Store.Load(h.server, h.o.Identity)
	if err != nil || cred.AccessToken == h.cred.AccessToken || cred.AccessToken == sent {
		return false
	}
	h.adopt(cred)
	return true
}

// Authorize implements auth.OAuthHandler: the server answered 401 or 403
// to a request with the current token. A credential saved meanwhile (a new
// login) or a refresh that works lets the transport retry; otherwise the
// request fails with an *AuthError.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	status := fmt.Sprintf("the server answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if resp.StatusCode == http.StatusForbidden {
		return h.forbidden(ctx, resp.Header, sent, status)
	}
	h.mu.Lock()
	if h.reloadLocked(sent) {
		h.mu.Unlock()
		return nil
	}
	refresh := h.cred.RefreshToken
	if refresh == "" {
		h.dead = status + " and there is no refresh token"
		h.mu.Unlock()
		return h.fail(h.dead, nil)
	}
	// The server refused a token the client took for valid (revoked, or
	// expired early): refresh now. Not under mu: the refresh saves.
	ts := h.source(&oauth2.Token{RefreshToken: refresh, Expiry: time.Unix(1, 0)})
	h.mu.Unlock()
	if _, err := ts.Token(); err != nil {
		h.mu.Lock()
		h.dead = status + " and the refresh failed"
		h.mu.Unlock()
		return h.fail(status+" and the refresh failed", err)
	}
	h.mu.Lock()
	h.ts = ts
	h.mu.Unlock()
	return nil
}

// forbidden handles a 403. For insufficient_scope with the scopes the
// server wants (RFC 6750 §3.1), the credential is stepped up: by StepUp
// when set (then the request is retried), else by keeping the scopes as
// wanted, for the next `manifold login` to ask for, and failing with what
// to run. Any other 403 is a right no login gives.
func (h *oauthHandler) forbidden(ctx context.Context, header http.Header, sent, status string) error {
	wanted, ok := insufficientScope(header)
	if !ok {
		return h.fail(status+" (the credential lacks a right it needs; a new login may not give it: ask the server's administrator)", nil)
	}
	h.mu.Lock()
	if h.reloadLocked(sent) { // a login since: try its credential
		h.mu.Unlock()
		return nil
	}
	all := unionScopes(h.cred.Scopes, h.cred.Wanted, wanted)
	key := strings.Join(slices.Sorted(slices.Values(all)), " ")
	if h.o.StepUp != nil && len(h.ups) < maxStepUps && !slices.Contains(h.ups, key) {
		h.ups = append(h.ups, key)
		h.mu.Unlock()
		if err := h.o.StepUp(ctx, h.o.Identity, all); err != nil {
			return h.fail(fmt.Sprintf("%s: it asks for the scope %s, and the new login failed", status, strings.Join(wanted, " ")), err)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if !h.reloadLocked(sent) {
			return h.fail("the new login saved no new credential", nil)
		}
		return nil
	}
	c := *h.cred
	c.Wanted = unionScopes(c.Wanted, wanted)
	h.cred = &c
	_ = h.o.Store.Save(h.server, h.o.Identity, &c)
	h.mu.Unlock()
	return h.fail(fmt.Sprintf("%s (insufficient_scope): the server asks for the scope %s, which the credential lacks; the new login asks for %s; nothing was executed",
		status, strings.Join(wanted, " "), strings.Join(all, " ")), nil)
}

// Bounds of the scopes taken from a server's challenge.
const (
	maxWantedScopes = 32
	maxScopeLen     = 128
)

// insufficientScope returns the scopes of a Bearer challenge with error
// insufficient_scope, and whether there is one that names scopes. Only
// scope tokens (RFC 6749 §3.3) are kept, and only so many: the server is
// not trusted.
func insufficientScope(h http.Header) ([]string, bool) {
	cs, err := oauthex.ParseWWWAuthenticate(h.Values("WWW-Authenticate"))
	if err != nil {
		return nil, false
	}
	for _, c := range cs {
		if !strings.EqualFold(c.Scheme, "bearer") || c.Params["error"] != "insufficient_scope" {
			continue
		}
		var out []string
		for _, s := range strings.Fields(c.Params["scope"]) {
			if len(out) == maxWantedScopes {
				break
			}
			if len(s) <= maxScopeLen && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e || r == '"' || r == '\\' }) {
				out = unionScopes(out, []string{s})
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

// savingSource saves each new token of src to the store.
type savingSource struct {
	h    *oauthHandler
	src  oauth2.TokenSource
	mu   sync.Mutex
	last string // guarded by mu; the access token last seen
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.src.Token()
	if err != nil {
		return nil, s.h.fail("the token refresh failed", err)
	}
	s.mu.Lock()
	changed := tok.AccessToken != s.last
	s.last = tok.AccessToken
	s.mu.Unlock()
	if changed {
		s.h.save(tok)
	}
	return tok, nil
}

// save stores tok as the handler's credential. A failed save is not fatal:
// the token works in this process, and the refresh token may still work.
func (h *oauthHandler) save(tok *oauth2.Token) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := *h.cred
	c.AccessToken, c.TokenType, c.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" {
		c.RefreshToken = tok.RefreshToken
	}
	h.cred = &c
	_ = h.o.Store.Save(h.server, h.o.Identity, &c)
}

// resourceKey is the context key of the RFC 8707 resource that
// resourceTransport adds to a refresh request.
type resourceKey struct{}

func withResource(ctx context.Context, resource string) context.Context {
	return context.WithValue(ctx, resourceKey{}, resource)
}

// resourceTransport adds the resource parameter (RFC 8707) to refresh
// requests, which x/oauth2's refresher sends without it: a token refreshed
// without it could come back for another audience, or be refused.
type resourceTransport struct {
	base http.RoundTripper
}

func (t *resourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resource, _ := req.Context().Value(resourceKey{}).(string)
	if resource == "" || req.Method != http.MethodPost || req.Body == nil ||
		!strings.HasPrefix(req.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err == nil && form.Get("grant_type") == "refresh_token" && !form.Has("resource") {
		form.Set("resource", resource)
		body = []byte(form.Encode())
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(r)
}
