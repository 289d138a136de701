// Package oauthfixture is a protected remote MCP server and its OAuth 2.1
// authorization server, both on loopback, for the end-to-end tests of
// Manifold as an OAuth client (internal/e2e/oauth_test.go).
//
// The authorization server is github.com/go-oauth2/oauth2/v4 (authorization
// code with PKCE, refresh with rotation), with RFC 8414 metadata and RFC
// 7591 dynamic registration added here. The MCP server is the go-sdk's
// streamable HTTP handler behind auth.RequireBearerToken; its one tool,
// whoami, answers with the token's user and records the token it received.
// The browser step is Consent: it follows the authorization link as a user
// who always agrees. It is a test fixture: never serve it to anyone.
package oauthfixture

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/go-oauth2/oauth2/v4"
	"github.com/go-oauth2/oauth2/v4/manage"
	"github.com/go-oauth2/oauth2/v4/models"
	"github.com/go-oauth2/oauth2/v4/server"
	"github.com/go-oauth2/oauth2/v4/store"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Scope is the scope the MCP server asks for.
const Scope = "notes"

// WriteScope is the scope the tool write_note needs besides Scope: a call
// without it is answered 403 insufficient_scope (step-up).
const WriteScope = "notes.write"

// Call is one tools/call the MCP server served.
type Call struct {
	Tool   string
	User   string
	Token  string
	Scopes []string
}

// Fixture is a running authorization server and MCP server.
type Fixture struct {
	// URL is the MCP endpoint; Issuer the authorization server's.
	URL    string
	Issuer string

	manager *manage.Manager
	clients *store.ClientStore
	as, rs  *http.Server

	mu       sync.Mutex
	calls    []Call              // guarded by mu
	tokenReq []url.Values        // guarded by mu
	issued   map[string][]string // guarded by mu; user -> access tokens issued, in order
	expired  map[string]bool     // guarded by mu; access tokens made to look expired
	refresh  map[string][]string // guarded by mu; user -> refresh tokens issued
	revoked  map[string]bool     // guarded by mu; access and refresh tokens revoked
	revokes  []url.Values        // guarded by mu; forms posted to the revocation endpoint
	revMode  string              // guarded by mu; "" (works), "fail" (503) or "absent" (not in the metadata)

	xcfg      *ExchangeConfig   // guarded by mu; nil: token exchange is off
	exchanged map[string]string // guarded by mu; exchanged access token -> subject
	xrefuse   map[string]bool   // guarded by mu; subjects whose exchange is refused
	xforms    []url.Values      // guarded by mu; forms posted to the exchange endpoint
	seen      []string          // guarded by mu; every Authorization header the MCP server got
}

// ExchangeConfig is the token exchange endpoint's (RFC 8693) trust: it
// exchanges a subject token signed by a key of JWKSURL, from Issuer, for
// Audience, posted by the client ClientID with ClientSecret.
type ExchangeConfig struct {
	JWKSURL, Issuer, Audience string
	ClientID, ClientSecret    string
}

// Start serves a fixture on two loopback ports; Close stops it.
func Start() (*Fixture, error) {
	asLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		asLn.Close()
		return nil, err
	}
	f := &Fixture{
		URL:     "http://" + rsLn.Addr().String() + "/mcp",
		Issuer:  "http://" + asLn.Addr().String(),
		issued:  make(map[string][]string),
		expired: make(map[string]bool),
		refresh: make(map[string][]string),
		revoked: make(map[string]bool),
		clients: store.NewClientStore(),

		exchanged: make(map[string]string),
		xrefuse:   make(map[string]bool),
	}
	f.manager = manage.NewDefaultManager()
	f.manager.SetAuthorizeCodeTokenCfg(&manage.Config{AccessTokenExp: time.Hour, RefreshTokenExp: 24 * time.Hour, IsGenerateRefresh: true})
	f.manager.MustTokenStorage(store.NewMemoryTokenStore())
	f.manager.MapClientStorage(f.clients)

	srv := server.NewServer(&server.Config{
		TokenType:                   "Bearer",
		AllowedResponseTypes:        []oauth2.ResponseType{oauth2.Code},
		AllowedGrantTypes:           []oauth2.GrantType{oauth2.AuthorizationCode, oauth2.Refreshing},
		AllowedCodeChallengeMethods: []oauth2.CodeChallengeMethod{oauth2.CodeChallengeS256},
		ForcePKCE:                   true,
	}, f.manager)
	srv.SetClientInfoHandler(server.ClientFormHandler)
	srv.SetUserAuthorizationHandler(func(w http.ResponseWriter, r *http.Request) (string, error) {
		user := r.FormValue("user")
		if user == "" {
			fmt.Fprint(w, `<form>Sign in as <input name="user"></form>`)
		}
		return user, nil
	})
	srv.SetRefreshingValidationHandler(func(ti oauth2.TokenInfo) (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		return !f.revoked[ti.GetRefresh()], nil
	})
	srv.SetResponseTokenHandler(func(w http.ResponseWriter, data map[string]any, header http.Header, statusCode ...int) error {
		if tok, ok := data["access_token"].(string); ok {
			// The issued token's user: the store knows it.
			if ti, err := f.manager.LoadAccessToken(context.Background(), tok); err == nil {
				f.mu.Lock()
				f.issued[ti.GetUserID()] = append(f.issued[ti.GetUserID()], tok)
				if rt, ok := data["refresh_token"].(string); ok {
					f.refresh[ti.GetUserID()] = append(f.refresh[ti.GetUserID()], rt)
				}
				f.mu.Unlock()
			}
		}
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.Header().Set("Cache-Control", "no-store")
		for k := range header {
			w.Header().Set(k, header.Get(k))
		}
		status := http.StatusOK
		if len(statusCode) > 0 && statusCode[0] > 0 {
			status = statusCode[0]
		}
		w.WriteHeader(status)
		return json.NewEncoder(w).Encode(data)
	})

	asMux := http.NewServeMux()
	asMux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		md := map[string]any{
			"issuer":                                f.Issuer,
			"authorization_endpoint":                f.Issuer + "/authorize",
			"token_endpoint":                        f.Issuer + "/token",
			"registration_endpoint":                 f.Issuer + "/register",
			"response_types_supported":              []string{"code"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":      []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
			"scopes_supported":                      []string{Scope, "offline_access"},
		}
		f.mu.Lock()
		if f.revMode != "absent" {
			md["revocation_endpoint"] = f.Issuer + "/revoke"
		}
		f.mu.Unlock()
		writeJSON(w, md)
	})
	asMux.HandleFunc("POST /revoke", f.revoke)
	asMux.HandleFunc("POST /exchange", f.exchange)
	asMux.HandleFunc("POST /register", f.register)
	asMux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		if err := srv.HandleAuthorizeRequest(w, r); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	asMux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.tokenReq = append(f.tokenReq, cloneValues(r.PostForm))
		f.mu.Unlock()
		_ = srv.HandleTokenRequest(w, r)
	})

	ms := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	mcp.AddTool(ms, &mcp.Tool{Name: "whoami", Description: "Says whose token the call carried."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ti := req.Extra.TokenInfo
			tok, _ := ti.Extra["token"].(string)
			f.mu.Lock()
			f.calls = append(f.calls, Call{Tool: "whoami", User: ti.UserID, Token: tok, Scopes: ti.Scopes})
			f.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "user=" + ti.UserID}}}, nil, nil
		})
	mcp.AddTool(ms, &mcp.Tool{Name: "write_note", Description: "Needs the scope notes.write too."},
		func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			ti := req.Extra.TokenInfo
			tok, _ := ti.Extra["token"].(string)
			f.mu.Lock()
			f.calls = append(f.calls, Call{Tool: "write_note", User: ti.UserID, Token: tok, Scopes: ti.Scopes})
			f.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "written by " + ti.UserID}}}, nil, nil
		})
	prmURL := "http://" + rsLn.Addr().String() + "/.well-known/oauth-protected-resource/mcp"
	protect := auth.RequireBearerToken(f.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prmURL, Scopes: []string{Scope}})
	rsMux := http.NewServeMux()
	rsMux.Handle("/mcp", f.record(protect(stepUp(prmURL, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms }, nil)))))
	rsMux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"resource":                 f.URL,
			"authorization_servers":    []string{f.Issuer},
			"scopes_supported":         []string{Scope},
			"bearer_methods_supported": []string{"header"},
		})
	})

	f.as = &http.Server{Handler: asMux, ReadHeaderTimeout: 10 * time.Second}
	f.rs = &http.Server{Handler: rsMux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = f.as.Serve(asLn) }()
	go func() { _ = f.rs.Serve(rsLn) }()
	return f, nil
}

// Close stops both servers.
func (f *Fixture) Close() {
	_ = f.rs.Close()
	_ = f.as.Close()
}

// verify is the MCP server's token check: the exchanged tokens, else the
// authorization server's store.
func (f *Fixture) verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	f.mu.Lock()
	sub, ok := f.exchanged[token]
	f.mu.Unlock()
	if ok {
		return &auth.TokenInfo{UserID: sub, Scopes: []string{Scope}, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"token": token}}, nil
	}
	ti, err := f.manager.LoadAccessToken(ctx, token)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	f.mu.Lock()
	bad := f.expired[token] || f.revoked[token]
	f.mu.Unlock()
	if bad {
		return nil, fmt.Errorf("%w: expired or revoked", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{
		UserID:     ti.GetUserID(),
		Scopes:     strings.Fields(ti.GetScope()),
		Expiration: ti.GetAccessCreateAt().Add(ti.GetAccessExpiresIn()),
		Extra:      map[string]any{"token": token},
	}, nil
}

// record keeps the Authorization header of every request to the MCP
// server.
func (f *Fixture) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("Authorization"); h != "" {
			f.mu.Lock()
			f.seen = append(f.seen, h)
			f.mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
}

// SeenAuthorization returns every Authorization header the MCP server got.
func (f *Fixture) SeenAuthorization() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

// EnableExchange turns the token exchange endpoint (Issuer + "/exchange")
// on.
func (f *Fixture) EnableExchange(c ExchangeConfig) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.xcfg = &c
}

// RefuseExchange makes the exchange endpoint refuse the tokens of sub
// (invalid_grant), as a provider does for a user it does not allow.
func (f *Fixture) RefuseExchange(sub string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.xrefuse[sub] = true
}

// Exchanged returns the tokens the exchange endpoint issued to sub.
func (f *Fixture) Exchanged(sub string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for tok, s := range f.exchanged {
		if s == sub {
			out = append(out, tok)
		}
	}
	return out
}

// ExchangeRequests returns the forms posted to the exchange endpoint.
func (f *Fixture) ExchangeRequests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]url.Values, len(f.xforms))
	for i, v := range f.xforms {
		out[i] = cloneValues(v)
	}
	return out
}

// exchange is RFC 8693 token exchange: a subject token that verifies
// (signature by a key of the JWKS, issuer, audience, expiry) is exchanged
// for an access token of the MCP server bound to its subject.
func (f *Fixture) exchange(w http.ResponseWriter, r *http.Request) {
	refuse := func(status int, code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
	}
	if err := r.ParseForm(); err != nil {
		refuse(http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f.mu.Lock()
	f.xforms = append(f.xforms, cloneValues(r.PostForm))
	c := f.xcfg
	f.mu.Unlock()
	form := r.PostForm
	switch {
	case c == nil:
		refuse(http.StatusBadRequest, "unsupported_grant_type", "token exchange is off")
		return
	case form.Get("client_id") != c.ClientID || form.Get("client_secret") != c.ClientSecret:
		refuse(http.StatusUnauthorized, "invalid_client", "unknown client")
		return
	case form.Get("grant_type") != "urn:ietf:params:oauth:grant-type:token-exchange",
		form.Get("subject_token_type") != "urn:ietf:params:oauth:token-type:access_token",
		form.Get("resource") != f.URL:
		refuse(http.StatusBadRequest, "invalid_request", "want a token exchange of an access token for resource "+f.URL)
		return
	}
	sub, err := verifySubject(r.Context(), c, form.Get("subject_token"))
	if err != nil {
		refuse(http.StatusBadRequest, "invalid_grant", "the subject token does not verify: "+err.Error())
		return
	}
	f.mu.Lock()
	refused := f.xrefuse[sub]
	tok := "xchg-" + rand.Text()
	if !refused {
		f.exchanged[tok] = sub
	}
	f.mu.Unlock()
	if refused {
		refuse(http.StatusBadRequest, "invalid_grant", "this user may not use the notes server")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, map[string]any{
		"access_token": tok, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"token_type": "Bearer", "expires_in": 3600,
	})
}

// verifySubject checks token against c and returns its subject.
func verifySubject(ctx context.Context, c *ExchangeConfig, token string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.JWKSURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return "", fmt.Errorf("jwks: %w", err)
	}
	tok, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		return "", err
	}
	if len(tok.Headers) != 1 {
		return "", fmt.Errorf("want one signature")
	}
	keys := set.Key(tok.Headers[0].KeyID)
	if len(keys) == 0 {
		return "", fmt.Errorf("unknown key %q", tok.Headers[0].KeyID)
	}
	var claims jwt.Claims
	if err := tok.Claims(keys[0].Key, &claims); err != nil {
		return "", err
	}
	if err := claims.Validate(jwt.Expected{Issuer: c.Issuer, AnyAudience: jwt.Audience{c.Audience}, Time: time.Now()}); err != nil {
		return "", err
	}
	if claims.Subject == "" {
		return "", fmt.Errorf("no subject")
	}
	return claims.Subject, nil
}

// stepUp answers a call of write_note whose token lacks WriteScope with
// 403 insufficient_scope naming it (RFC 6750 §3.1, MCP step-up).
func stepUp(prmURL string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		ti := auth.TokenInfoFromContext(r.Context())
		if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" && msg.Params.Name == "write_note" &&
			ti != nil && !slices.Contains(ti.Scopes, WriteScope) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s", error_description="write_note needs %s"`, WriteScope, prmURL, WriteScope))
			w.WriteHeader(http.StatusForbidden)
			writeJSON(w, map[string]string{"error": "insufficient_scope"})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// revoke is RFC 7009 revocation: it records the form, and the token (of
// the client that asks) no longer works, neither to call nor to refresh.
func (f *Fixture) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.revokes = append(f.revokes, cloneValues(r.PostForm))
	mode := f.revMode
	f.mu.Unlock()
	if mode == "fail" {
		http.Error(w, "revocation is down", http.StatusServiceUnavailable)
		return
	}
	tok := r.PostForm.Get("token")
	ti, err := f.manager.LoadRefreshToken(r.Context(), tok)
	if err != nil {
		ti, err = f.manager.LoadAccessToken(r.Context(), tok)
	}
	if err == nil && ti.GetClientID() != r.PostForm.Get("client_id") {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]string{"error": "invalid_client"})
		return
	}
	f.mu.Lock()
	f.revoked[tok] = true
	f.mu.Unlock()
	w.WriteHeader(http.StatusOK) // also for an unknown token (RFC 7009 §2.2)
}

// Revocations returns the forms posted to the revocation endpoint so far.
func (f *Fixture) Revocations() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]url.Values, len(f.revokes))
	for i, v := range f.revokes {
		out[i] = cloneValues(v)
	}
	return out
}

// SetRevocation sets how the revocation endpoint behaves: "" works,
// "fail" answers 503, "absent" leaves it out of the metadata.
func (f *Fixture) SetRevocation(mode string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.revMode = mode
}

// register is RFC 7591 dynamic client registration of public clients.
func (f *Fixture) register(w http.ResponseWriter, r *http.Request) {
	var md struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&md); err != nil || len(md.RedirectURIs) == 0 {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id := "dcr-" + rand.Text()
	if err := f.clients.Set(id, &models.Client{ID: id, Domain: md.RedirectURIs[0], Public: true}); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusCreated)
	writeJSON(w, map[string]any{
		"client_id":                  id,
		"client_name":                md.ClientName,
		"redirect_uris":              md.RedirectURIs,
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
	})
}

// Consent is the browser: it opens link as user, agrees, and follows the
// redirect to the client's loopback listener.
func Consent(ctx context.Context, link, user string) error {
	u, err := url.Parse(link)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("user", user)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req) // follows the redirect to the callback
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("consent: %s answered %d: %s", resp.Request.URL, resp.StatusCode, body)
	}
	return nil
}

// Calls returns the calls served so far.
func (f *Fixture) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// TokenRequests returns the forms posted to the token endpoint so far.
func (f *Fixture) TokenRequests() []url.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]url.Values, len(f.tokenReq))
	for i, v := range f.tokenReq {
		out[i] = cloneValues(v)
	}
	return out
}

// Issued returns the access tokens issued to user, oldest first.
func (f *Fixture) Issued(user string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.issued[user]...)
}

// RefreshTokens returns the refresh tokens issued to user, oldest first.
func (f *Fixture) RefreshTokens(user string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.refresh[user]...)
}

// AllIssued returns every access token issued.
func (f *Fixture) AllIssued() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, ts := range f.issued {
		out = append(out, ts...)
	}
	return out
}

// Expire makes every access token issued so far look expired to the MCP
// server (as a token does when it expires before the client expects); the
// refresh tokens stay good.
func (f *Fixture) Expire() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ts := range f.issued {
		for _, t := range ts {
			f.expired[t] = true
		}
	}
}

// Revoke revokes every grant of user issued so far: access and refresh
// tokens. A new login gets new ones.
func (f *Fixture) Revoke(user string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.issued[user] {
		f.revoked[t] = true
	}
	for _, t := range f.refresh[user] {
		f.revoked[t] = true
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v))
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
