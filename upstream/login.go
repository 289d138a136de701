package upstream

import (
	"context"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
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
	// protected resource metadata name.
	Scopes []string
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
// the credential: it asks the server without a token, follows its
// challenge to the protected resource and authorization server metadata
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
	hc := o.Client
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
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
	defer srv.Close()

	req, resp, err := challenge(ctx, hc, o.URL)
	if err != nil {
		return fmt.Errorf("login %q: %w", o.Name, err)
	}
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		resp.Body.Close()
		return fmt.Errorf("login %q: %s answered %d %s to a request without a token, not 401: it does not ask for OAuth; remove auth = \"oauth\" from its config",
			o.Name, o.URL, resp.StatusCode, http.StatusText(resp.StatusCode))
	}

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
	if len(o.Scopes) > 0 {
		hcfg.ScopeFilter = func([]string) []string { return o.Scopes }
	}
	h, err := auth.NewAuthorizationCodeHandler(hcfg)
	if err != nil {
		resp.Body.Close()
		return fmt.Errorf("login %q: %w", o.Name, err)
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("login %q: %w", o.Name, err)
	}
	if tok == nil || cfg == nil {
		return fmt.Errorf("login %q: the authorization server gave no token", o.Name)
	}
	if resource == "" {
		resource = o.URL
	}
	cred := &tokenstore.Credential{
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
		Scopes: cfg.Scopes, Resource: resource, TokenURL: cfg.Endpoint.TokenURL, AuthStyle: int(cfg.Endpoint.AuthStyle),
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
	}
	if err := o.Store.Save(o.Name, o.Identity, cred); err != nil {
		return fmt.Errorf("login %q: %w", o.Name, err)
	}
	return nil
}

// challenge posts an initialize request without a token to endpoint, for
// the server's 401 and its WWW-Authenticate challenge.
func challenge(ctx context.Context, hc *http.Client, endpoint string) (*http.Request, *http.Response, error) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + protocolVersion + `","capabilities":{},"clientInfo":{"name":"manifold"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("asking %s for its challenge: %w", endpoint, err)
	}
	return req, resp, nil
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
