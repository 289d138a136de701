package upstream

import (
	"context"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/manifold-mcp/manifold/internal/tokenstore"
)

// LoginOptions describes one run of the OAuth 2.1 authorization-code flow
// against a remote server's authorization server.
type LoginOptions struct {
	// Name is the server's key in the config; URL its MCP endpoint.
	Name string
	URL  string
	// Identity is whose credential this is (such as "user:alice"); if
	// empty, the service credential.
	Identity string
	// Store receives the credential. Required.
	Store *tokenstore.Store

	// ClientID (and ClientSecret) of a client registered with the
	// authorization server; ClientMetadataURL, the https URL of a Client ID
	// Metadata Document, used when the server supports them. With neither,
	// or when neither applies, the client registers dynamically (RFC 7591).
	ClientID          string
	ClientSecret      string
	ClientMetadataURL string
	// Scopes to ask for. If empty, those the server's challenge or its
	// protected resource metadata name. Either way the login also asks for
	// the scopes of the credential it replaces (those granted before, and
	// those the server asked for since: step-up), and for Extra.
	Scopes []string
	Extra  []string
	// RedirectPort is the loopback port of the redirect listener. If zero,
	// any free port (RFC 8252 §7.3).
	RedirectPort int
	// Timeout bounds the whole flow. If zero, 5 minutes.
	Timeout time.Duration

	// Prompt is shown the link to open in a browser. Required.
	Prompt func(link string)
	// Client carries the requests to the MCP server and the authorization
	// server. If nil, a client with a 30 s timeout.
	Client *http.Client
}

// Login runs the authorization-code flow with PKCE for o.Name and stores
// the credential: it opens a session to the server without a token (and
// lists its tools), follows the challenge of the first refused request to the
// protected resource and authorization server metadata
// (the go-sdk's auth.AuthorizationCodeHandler does discovery, Client ID
// Metadata Documents, dynamic registration, PKCE and the resource
// indicator), shows the browser link, and takes the code on a loopback
// redirect listener.
func Login(ctx context.Context, o LoginOptions) error {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	hc := &http.Client{Timeout: 30 * time.Second}
	if o.Client != nil {
		c := *o.Client
		hc = &c
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	meta := &metadataRecorder{base: base}
	hc.Transport = meta
	// What the credential it replaces holds, and what the server asked for
	// since, is asked for again: a new login never loses a scope.
	keep := slices.Clone(o.Extra)
	if prev, err := o.Store.Load(o.Name, o.Identity); err == nil {
		keep = unionScopes(prev.Scopes, prev.Wanted, keep)
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.RedirectPort)))
	if err != nil {
		return fmt.Errorf("login %q: redirect listener on 127.0.0.1:%d: %w; set another redirect_port", o.Name, o.RedirectPort, err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://%s/callback", ln.Addr())
	codes := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(codes), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer func() {
		// Gracefully: the browser's page is still being written when the
		// code it brought has ended the login.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	var resource string
	var cfg *oauth2.Config
	var tok *oauth2.Token
	hcfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs:            []string{redirect},
			ClientName:              "Manifold",
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		RequestRefreshToken: true,
		Client:              hc,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if u, err := url.Parse(args.URL); err == nil {
				resource = u.Query().Get("resource")
			}
			o.Prompt(args.URL)
			select {
			case r := <-codes:
				return r.res, r.err
			case <-ctx.Done():
				return nil, fmt.Errorf("no answer from the browser within %v: %w", o.Timeout, ctx.Err())
			}
		},
		NewTokenSource: func(_ context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			cfg, tok = c, t
			return oauth2.StaticTokenSource(t), nil
		},
	}
	if o.ClientMetadataURL != "" {
		hcfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
	}
	if o.ClientID != "" {
		hcfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			hcfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	}
	var requested []string
	hcfg.ScopeFilter = func(discovered []string) []string {
		if len(o.Scopes) > 0 {
			discovered = o.Scopes
		}
		requested = unionScopes(discovered, keep)
		return requested
	}
	h, err := auth.NewAuthorizationCodeHandler(hcfg)
	if err != nil {
		return fmt.Errorf("login %q: %w", o.Name, err)
	}
	// A session as serve opens one, with the interactive handler: whichever
	// request the server refuses (initialize, or a list) starts the flow.
	st := &mcp.StreamableClientTransport{Endpoint: o.URL, HTTPClient: hc, OAuthHandler: h}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "manifold"}, nil).Connect(ctx, st, &mcp.ClientSessionOptions{ProtocolVersion: ModernVersion})
	if err == nil {
		_, err = cs.ListTools(ctx, nil)
		_ = cs.Close()
	}
	switch {
	case tok == nil && err != nil:
		return fmt.Errorf("login %q: %w", o.Name, err)
	case tok == nil:
		return fmt.Errorf("login %q: %s initialized and listed its tools without asking for authorization: it does not need OAuth; remove auth = \"oauth\" from its config", o.Name, o.URL)
	}
	if resource == "" {
		resource = o.URL
	}
	granted := cfg.Scopes
	if s, ok := tok.Extra("scope").(string); ok && s != "" {
		granted = strings.Fields(s)
	}
	if len(granted) == 0 {
		granted = requested
	}
	cred := &tokenstore.Credential{
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
		Scopes: granted, Resource: resource, TokenURL: cfg.Endpoint.TokenURL, AuthStyle: int(cfg.Endpoint.AuthStyle),
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RevocationURL: meta.revocationFor(cfg.Endpoint.TokenURL),
	}
	if serr := o.Store.Save(o.Name, o.Identity, cred); serr != nil {
		return fmt.Errorf("login %q: %w", o.Name, serr)
	}
	if err != nil {
		return fmt.Errorf("login %q: the credential is saved, but the server still refused the session: %w", o.Name, err)
	}
	return nil
}

// callback is what the redirect brought: a code, or the server's refusal.
type callback struct {
	res *auth.AuthorizationResult
	err error
}

// callbackHandler takes the authorization response on the redirect URL
// and passes the first one on.
func callbackHandler(codes chan<- callback) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if e := q.Get("error"); e != "" {
			msg := e
			if d := q.Get("error_description"); d != "" {
				msg += ": " + d
			}
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<p>Authorization failed: %s. Run manifold login again.</p>", html.EscapeString(msg))
			select {
			case codes <- callback{err: fmt.Errorf("the authorization server refused: %s", msg)}:
			default:
			}
			return
		}
		if q.Get("code") == "" {
			http.Error(w, "no code in the redirect", http.StatusBadRequest)
			return
		}
		select {
		case codes <- callback{res: &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}}:
			_, _ = io.WriteString(w, "<p>Manifold is authorized. You can close this window.</p>")
		default:
			http.Error(w, "this login has already been answered", http.StatusConflict)
		}
	})
	return mux
}

// unionScopes is every scope of lists, each once, in first-seen order.
func unionScopes(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		for _, s := range l {
			if s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}
