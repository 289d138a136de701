package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Identity is who a request comes from.
type Identity struct {
	// Subject is the token's sub claim, or the API key's name.
	Subject string
	// Groups are the token's groups and roles claims, or the key's groups.
	Groups []string
	// Scopes are the token's scopes (none for an API key).
	Scopes []string
	// Method is MethodJWT or MethodAPIKey.
	Method string
	// Issuer is the token's issuer; empty for an API key.
	Issuer string
}

// Methods of authentication.
const (
	MethodJWT    = "jwt"
	MethodAPIKey = "api_key"
)

// UserID is the identity as one string, the same for every token of the
// same subject: what an HTTP session is bound to. A key and a token whose
// subjects are spelled alike are different users.
func (id Identity) UserID() string {
	if id.Method == MethodAPIKey {
		return "key:" + id.Subject
	}
	return "jwt:" + id.Issuer + " " + id.Subject
}

// Keys of auth.TokenInfo.Extra that carry the identity to packages that see
// only the SDK's TokenInfo (the proxy).
const (
	ExtraSubject = "subject"
	ExtraGroups  = "groups"
	ExtraMethod  = "method"
	// ExtraSubjectToken is the validated JWT itself (not for API keys):
	// token exchange (RFC 8693) sends it to the identity provider, and
	// nothing else may use it (it is never forwarded to an upstream).
	ExtraSubjectToken = "subject_token"
)

type identityKey struct{}

// FromContext returns the identity that [Authenticator.Middleware] put on a
// request's context.
func FromContext(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// DefaultAlgorithms are the JWS algorithms accepted when Options.Algorithms
// is empty: asymmetric only. "none" and the HMAC algorithms are never
// accepted (a verifier holding an issuer's public key must not take it for
// a shared secret).
var DefaultAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// Options configures an [Authenticator].
type Options struct {
	// Resource is the canonical URL of the protected MCP endpoint, such as
	// "https://manifold.example.com/mcp": the resource of the protected
	// resource metadata, and the default audience. Required.
	Resource string
	// Issuer is the authorization server whose JWT access tokens are
	// accepted (its iss). If empty, only API keys are.
	Issuer string
	// Audiences are the aud values accepted (any one suffices). If empty,
	// Resource (RFC 8707: a token for this resource).
	Audiences []string
	// JWKSURL is the issuer's key set. If empty, the jwks_uri of the issuer's
	// metadata (RFC 8414 or OpenID discovery).
	JWKSURL string
	// Scopes are the scopes a token must carry, all of them; they are
	// announced in the metadata and challenges. An API key needs none.
	Scopes []string
	// Algorithms are the JWS algorithms accepted. If empty,
	// DefaultAlgorithms; "none" and HS* are refused.
	Algorithms []string
	// Leeway is the clock skew allowed on exp, nbf and iat. If zero, 30s.
	Leeway time.Duration
	// Keys are the static API keys. More can be set with SetKeys.
	Keys []Key
	// HTTPClient fetches the issuer's metadata and JWKS. If nil, a client
	// with a 10s timeout.
	HTTPClient *http.Client
	// MaxJWKSBytes bounds a JWKS document. If zero, 1 MiB.
	MaxJWKSBytes int64
	// JWKSMinRefresh is the least time between two fetches of the JWKS (a
	// token with an unknown kid makes one). If zero, 30s.
	JWKSMinRefresh time.Duration
	// JWKSMaxAge is how long a fetched JWKS is used before it is fetched
	// again. If zero, 1h.
	JWKSMaxAge time.Duration
	// Logger receives JWKS fetch failures and refused tokens (debug). If
	// nil, nothing is logged.
	Logger *slog.Logger
	// Now is the clock, for tests. If nil, time.Now.
	Now func() time.Time
}

// maxTokenBytes bounds a bearer token: larger ones are refused unparsed.
const maxTokenBytes = 16 << 10

// Authenticator checks the bearer token of HTTP requests.
type Authenticator struct {
	opts   Options
	algs   []jose.SignatureAlgorithm
	keys   keySet
	jwks   *jwks // nil without an issuer
	prmURL string
	log    *slog.Logger
}

// New returns an Authenticator for opts, or an error naming what is wrong.
// It fetches nothing: the issuer's keys are fetched at the first token.
func New(opts Options) (*Authenticator, error) {
	u, err := url.Parse(opts.Resource)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("resource %q is not an http(s) URL without query or fragment", opts.Resource)
	}
	if opts.Leeway == 0 {
		opts.Leeway = 30 * time.Second
	}
	if len(opts.Audiences) == 0 {
		opts.Audiences = []string{opts.Resource}
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			Proxy:                  http.ProxyFromEnvironment,
			DialContext:            (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			TLSHandshakeTimeout:    5 * time.Second,
			ResponseHeaderTimeout:  10 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		}}
	}
	if opts.MaxJWKSBytes == 0 {
		opts.MaxJWKSBytes = 1 << 20
	}
	if opts.JWKSMinRefresh == 0 {
		opts.JWKSMinRefresh = 30 * time.Second
	}
	if opts.JWKSMaxAge == 0 {
		opts.JWKSMaxAge = time.Hour
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	names := opts.Algorithms
	if len(names) == 0 {
		names = DefaultAlgorithms
	}
	a := &Authenticator{opts: opts, log: log}
	for _, n := range names {
		if !slices.Contains(DefaultAlgorithms, n) {
			return nil, fmt.Errorf("algorithm %q is not accepted; use asymmetric ones among %s", n, strings.Join(DefaultAlgorithms, ", "))
		}
		a.algs = append(a.algs, jose.SignatureAlgorithm(n))
	}
	if opts.Issuer != "" {
		a.jwks = &jwks{url: opts.JWKSURL, issuer: opts.Issuer, client: opts.HTTPClient, maxBytes: opts.MaxJWKSBytes,
			minRefresh: opts.JWKSMinRefresh, maxAge: opts.JWKSMaxAge, now: opts.Now, log: log, fetching: make(chan struct{}, 1)}
	}
	a.keys.set(opts.Keys)
	// The metadata of the resource at path P is at /.well-known/oauth-protected-resource/P (RFC 9728 §3.1).
	a.prmURL = (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: metadataPath + strings.TrimSuffix(u.Path, "/")}).String()
	return a, nil
}

// SetKeys replaces the API keys (a reload): a key left out is refused from
// the next request on.
func (a *Authenticator) SetKeys(keys []Key) { a.keys.set(keys) }

// metadataPath is RFC 9728's well-known path.
const metadataPath = "/.well-known/oauth-protected-resource"

// MetadataHandlers returns the protected resource metadata (RFC 9728) by
// route pattern: at the well-known path and at its form suffixed with the
// resource's path (/.well-known/oauth-protected-resource/mcp), which is
// the one the challenges point to.
func (a *Authenticator) MetadataHandlers() map[string]http.Handler {
	meta := &oauthex.ProtectedResourceMetadata{
		Resource:               a.opts.Resource,
		ScopesSupported:        a.opts.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Manifold",
	}
	if a.opts.Issuer != "" {
		meta.AuthorizationServers = []string{a.opts.Issuer}
	}
	h := sdkauth.ProtectedResourceMetadataHandler(meta)
	u, _ := url.Parse(a.prmURL)
	return map[string]http.Handler{metadataPath: h, u.Path: h}
}

// ResourceMetadataURL is the URL of the metadata, as the challenges give it.
func (a *Authenticator) ResourceMetadataURL() string { return a.prmURL }

// refusal is why a request is not let in: the HTTP status and the OAuth
// error code of the challenge ("" when the request had no credentials).
type refusal struct {
	status int
	code   string
	desc   string
}

func (r *refusal) Error() string { return r.desc }

// Middleware lets a request through to next only with a valid token (or API
// key) in its Authorization header, with the identity on its context (see
// FromContext, and the SDK's auth.TokenInfoFromContext, whose UserID binds
// an MCP session to its user); else it answers 401, 403 or 400 with a
// WWW-Authenticate challenge pointing to the metadata.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	// The SDK's RequireBearerToken is the one way to put its TokenInfo on the
	// context (its key is unexported); its own checks and challenge lack the
	// error codes of RFC 6750, so the request is checked here first and the
	// SDK's verifier only hands over the identity already verified.
	inner := sdkauth.RequireBearerToken(func(ctx context.Context, _ string, _ *http.Request) (*sdkauth.TokenInfo, error) {
		ti, ok := ctx.Value(tokenInfoKey{}).(*sdkauth.TokenInfo)
		if !ok {
			return nil, sdkauth.ErrInvalidToken
		}
		return ti, nil
	}, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true, ClockSkew: a.opts.Leeway})(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, exp, err := a.authenticate(r)
		if err != nil {
			a.refuse(w, r, err)
			return
		}
		ti := &sdkauth.TokenInfo{Scopes: id.Scopes, Expiration: exp, UserID: id.UserID(),
			Extra: map[string]any{ExtraSubject: id.Subject, ExtraGroups: id.Groups, ExtraMethod: id.Method}}
		if id.Method == MethodJWT {
			ti.Extra[ExtraSubjectToken] = bearerToken(r)
		}
		ctx := context.WithValue(r.Context(), identityKey{}, id)
		ctx = context.WithValue(ctx, tokenInfoKey{}, ti)
		inner.ServeHTTP(w, r.WithContext(ctx))
	})
}

type tokenInfoKey struct{}

// bearerToken is the token of r's one Authorization header (authenticate
// has checked it).
func bearerToken(r *http.Request) string {
	_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.TrimLeft(token, " ")
}

// refuse answers err's status with its challenge and a JSON body.
func (a *Authenticator) refuse(w http.ResponseWriter, r *http.Request, err error) {
	var rf *refusal
	if !errors.As(err, &rf) {
		rf = &refusal{status: http.StatusUnauthorized, code: "invalid_token", desc: "the token is not valid"}
	}
	a.log.Debug("refused a request", "path", r.URL.Path, "status", rf.status, "error", rf.code, "why", rf.desc)
	params := []string{}
	if rf.code != "" {
		params = append(params, fmt.Sprintf("error=%q", rf.code), fmt.Sprintf("error_description=%q", challengeText(rf.desc)))
	}
	params = append(params, fmt.Sprintf("resource_metadata=%q", a.prmURL))
	if len(a.opts.Scopes) > 0 {
		params = append(params, fmt.Sprintf("scope=%q", strings.Join(a.opts.Scopes, " ")))
	}
	w.Header().Set("WWW-Authenticate", "Bearer "+strings.Join(params, ", "))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(rf.status)
	code := rf.code
	if code == "" {
		code = "unauthorized"
	}
	body, _ := json.Marshal(map[string]string{"error": code, "error_description": "manifold: " + challengeText(rf.desc)})
	_, _ = w.Write(append(body, '\n'))
}

// challengeText keeps a description to the characters RFC 6750 §3 allows
// in error_description (printable ASCII but '"' and '\'), and to 300 bytes
// (it may quote a kid, which nothing has verified).
func challengeText(s string) string {
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return ' '
		}
		return r
	}, s)
}

// authenticate returns the identity of r's credentials and when they
// expire (zero for an API key).
func (a *Authenticator) authenticate(r *http.Request) (Identity, time.Time, error) {
	values := r.Header.Values("Authorization")
	if len(values) == 0 {
		return Identity{}, time.Time{}, &refusal{status: http.StatusUnauthorized,
			desc: "this endpoint needs authentication: send Authorization: Bearer TOKEN (an access token from the authorization server in the metadata, or an API key)"}
	}
	if len(values) > 1 {
		return Identity{}, time.Time{}, &refusal{status: http.StatusBadRequest, code: "invalid_request", desc: "more than one Authorization header; send one"}
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return Identity{}, time.Time{}, &refusal{status: http.StatusUnauthorized,
			desc: "the Authorization header is not a Bearer token; send Authorization: Bearer TOKEN"}
	}
	token = strings.TrimLeft(token, " ")
	switch {
	case token == "" || !isB64Token(token):
		return Identity{}, time.Time{}, &refusal{status: http.StatusBadRequest, code: "invalid_request",
			desc: "the Authorization header is malformed; send Authorization: Bearer TOKEN, one token of the characters of RFC 6750"}
	case len(token) > maxTokenBytes:
		return Identity{}, time.Time{}, &refusal{status: http.StatusUnauthorized, code: "invalid_token",
			desc: fmt.Sprintf("the token is longer than %d bytes", maxTokenBytes)}
	}
	if k, ok := a.keys.match(token); ok {
		return Identity{Subject: k.Name, Groups: slices.Clone(k.Groups), Method: MethodAPIKey}, time.Time{}, nil
	}
	if a.jwks == nil || strings.Count(token, ".") != 2 {
		return Identity{}, time.Time{}, &refusal{status: http.StatusUnauthorized, code: "invalid_token", desc: "the token is not a valid API key"}
	}
	return a.verifyJWT(r.Context(), token)
}

// isB64Token reports whether s is an RFC 6750 b64token.
func isB64Token(s string) bool {
	end := len(strings.TrimRight(s, "="))
	for i := 0; i < end; i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			return false
		}
	}
	return end > 0
}

// accessClaims are the claims of an access token beyond the registered ones
// (RFC 9068 and common IdP practice).
type accessClaims struct {
	Scope  json.RawMessage `json:"scope"` // "a b c" (RFC 8693 §4.2); some IdPs send an array
	Scp    json.RawMessage `json:"scp"`   // Entra, Okta: an array or a string
	Groups json.RawMessage `json:"groups"`
	Roles  json.RawMessage `json:"roles"`
}

// maxClaimValues bounds the scopes and groups taken from one token.
const maxClaimValues = 256

// verifyJWT checks a JWT access token: an accepted algorithm, a signature by
// one of the issuer's keys, the issuer, the audience, exp (required), nbf
// and iat with the leeway, a subject, and the required scopes.
func (a *Authenticator) verifyJWT(ctx context.Context, token string) (Identity, time.Time, error) {
	invalid := func(format string, args ...any) (Identity, time.Time, error) {
		return Identity{}, time.Time{}, &refusal{status: http.StatusUnauthorized, code: "invalid_token", desc: fmt.Sprintf(format, args...)}
	}
	tok, err := jwt.ParseSigned(token, a.algs)
	if err != nil {
		return invalid("the token is not a JWT signed with an accepted algorithm (%s)", algNames(a.algs))
	}
	if len(tok.Headers) != 1 {
		return invalid("the token must have exactly one signature")
	}
	h := tok.Headers[0]
	keys, err := a.jwks.candidates(ctx, h.KeyID, jose.SignatureAlgorithm(h.Algorithm))
	if err != nil {
		if errors.Is(err, errNoKey) {
			return invalid("no key of the issuer signed this token (unknown kid %q)", h.KeyID)
		}
		// The issuer's keys are not available: nothing can be verified.
		return invalid("the issuer's signing keys could not be fetched; retry later")
	}
	var std jwt.Claims
	var extra accessClaims
	verified := false
	for _, k := range keys {
		if tok.Claims(k.Key, &std, &extra) == nil {
			verified = true
			break
		}
	}
	if !verified {
		return invalid("the token's signature does not verify with the issuer's key")
	}
	if std.Expiry == nil {
		return invalid("the token has no exp claim")
	}
	err = std.ValidateWithLeeway(jwt.Expected{Issuer: a.opts.Issuer, AnyAudience: a.opts.Audiences, Time: a.opts.Now()}, a.opts.Leeway)
	switch {
	case errors.Is(err, jwt.ErrInvalidIssuer):
		return invalid("the token was issued by %q, not by %q", std.Issuer, a.opts.Issuer)
	case errors.Is(err, jwt.ErrInvalidAudience):
		return invalid("the token is not for this resource: its audience is not %q (ask the authorization server for a token with resource=%s)", strings.Join(a.opts.Audiences, `" or "`), a.opts.Resource)
	case errors.Is(err, jwt.ErrExpired):
		return invalid("the token expired at %s", std.Expiry.Time().UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrNotValidYet):
		return invalid("the token is not valid before %s", std.NotBefore.Time().UTC().Format(time.RFC3339))
	case err != nil:
		return invalid("the token's claims are not valid: %v", err)
	}
	if std.Subject == "" {
		return invalid("the token has no sub claim")
	}
	id := Identity{Subject: std.Subject, Method: MethodJWT, Issuer: std.Issuer}
	id.Scopes = append(claimStrings(extra.Scope), claimStrings(extra.Scp)...)
	id.Groups = append(claimStrings(extra.Groups), claimStrings(extra.Roles)...)
	for _, s := range a.opts.Scopes {
		if !slices.Contains(id.Scopes, s) {
			return Identity{}, time.Time{}, &refusal{status: http.StatusForbidden, code: "insufficient_scope",
				desc: fmt.Sprintf("the token lacks the scope %q; ask for a token with the scopes %q", s, strings.Join(a.opts.Scopes, " "))}
		}
	}
	return id, std.Expiry.Time(), nil
}

// claimStrings reads a claim that is a space-separated string or an array
// of strings; anything else is no values.
func claimStrings(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		f := strings.Fields(s)
		return f[:min(len(f), maxClaimValues)]
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		out := list[:0]
		for _, v := range list {
			if v != "" && len(out) < maxClaimValues {
				out = append(out, v)
			}
		}
		return out
	}
	return nil
}

func algNames(algs []jose.SignatureAlgorithm) string {
	s := make([]string, len(algs))
	for i, a := range algs {
		s[i] = string(a)
	}
	return strings.Join(s, ", ")
}
