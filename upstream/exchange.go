package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// This file is token exchange (RFC 8693, credentials = "exchange"): a
// connection of one identity carries a token that the team's identity
// provider issued for this upstream in exchange for the caller's own
// validated downstream token. The downstream token itself goes to the
// identity provider only, never to the upstream. The exchanged token is
// kept in memory, per identity, until it expires.

// Exchange configures the token exchange of one identity's connection.
type Exchange struct {
	// TokenURL is the identity provider's token endpoint. Required.
	TokenURL string
	// Audience and Resource name the upstream to the identity provider
	// (RFC 8693 §2.1); Resource is the server's URL if empty, Audience is
	// left to the provider if empty (then Resource is sent as audience).
	Audience string
	Resource string
	// Scopes asked for; none if empty.
	Scopes []string
	// ClientID and ClientSecret authenticate Manifold at the provider.
	ClientID     string
	ClientSecret string
	// Identity is whose connection this is, as errors name it.
	Identity string
	// Subject returns the caller's current validated downstream token (the
	// latest one its calls carried); "" if there is none.
	Subject func() string
}

// exchangeSkew is how long before its expiry an exchanged token is
// exchanged again.
const exchangeSkew = 30 * time.Second

// exchangeHandler implements auth.OAuthHandler with token exchange.
type exchangeHandler struct {
	server string
	x      Exchange
	client *http.Client

	mu  sync.Mutex
	tok *oauth2.Token // guarded by mu; the exchanged token, nil before the first exchange
}

func newExchangeHandler(server, url string, x Exchange, base http.RoundTripper) *exchangeHandler {
	if x.Resource == "" {
		x.Resource = url
	}
	if x.Audience == "" {
		x.Audience = x.Resource
	}
	return &exchangeHandler{server: server, x: x, client: &http.Client{Transport: base, Timeout: 30 * time.Second}}
}

func (h *exchangeHandler) fail(reason string, err error) *AuthError {
	return &AuthError{Server: h.server, Identity: h.x.Identity, Reason: reason, Err: err,
		Hint: "the caller's token is exchanged for the server's at " + h.x.TokenURL + " (credentials = \"exchange\"): retry with a fresh token, or ask the identity provider's administrator to allow this exchange for " + h.x.Identity}
}

// TokenSource implements auth.OAuthHandler: the token source of the
// cached exchanged token, exchanged again when it expires.
func (h *exchangeHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return exchangeSource{h}, nil
}

type exchangeSource struct{ h *exchangeHandler }

func (s exchangeSource) Token() (*oauth2.Token, error) {
	h := s.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tok != nil && (h.tok.Expiry.IsZero() || time.Until(h.tok.Expiry) > exchangeSkew) {
		return h.tok, nil
	}
	return h.exchangeLocked()
}

// exchangeLocked exchanges the current subject token. Called with mu held:
// one exchange at a time per identity.
func (h *exchangeHandler) exchangeLocked() (*oauth2.Token, error) {
	h.tok = nil
	subject := ""
	if h.x.Subject != nil {
		subject = h.x.Subject()
	}
	if subject == "" {
		return nil, h.fail("the caller's request carries no token to exchange (an API key cannot be exchanged; use a token from the identity provider)", nil)
	}
	creds := &oauthex.ClientCredentials{ClientID: h.x.ClientID}
	if h.x.ClientSecret != "" {
		creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: h.x.ClientSecret}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tok, err := oauthex.ExchangeToken(ctx, h.x.TokenURL, &oauthex.TokenExchangeRequest{
		RequestedTokenType: "urn:ietf:params:oauth:token-type:access_token",
		Audience:           h.x.Audience,
		Resource:           h.x.Resource,
		Scope:              h.x.Scopes,
		SubjectToken:       subject,
		SubjectTokenType:   "urn:ietf:params:oauth:token-type:access_token",
	}, creds, h.client)
	if err != nil {
		return nil, h.fail("the identity provider refused to exchange the caller's token: "+exchangeReason(err), nil)
	}
	if tok.AccessToken == "" {
		return nil, h.fail("the identity provider's answer holds no token", nil)
	}
	if !strings.EqualFold(tok.TokenType, "bearer") && tok.TokenType != "" {
		return nil, h.fail(fmt.Sprintf("the identity provider issued a %q token, not a Bearer token", printable(tok.TokenType, 32)), nil)
	}
	tok.TokenType = "Bearer"
	h.tok = tok
	return tok, nil
}

// exchangeReason is what the provider said, without anything it echoed
// of the request (it may echo the subject token).
func exchangeReason(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := fmt.Sprintf("it answered %d", re.Response.StatusCode)
		if re.ErrorCode != "" {
			msg += " " + printable(re.ErrorCode, 64)
		}
		if re.ErrorDescription != "" {
			msg += " (" + printable(re.ErrorDescription, 200) + ")"
		}
		return msg
	}
	var ue interface{ Timeout() bool }
	if errors.As(err, &ue) && ue.Timeout() {
		return "no answer within 30s"
	}
	return "the request failed (" + printable(err.Error(), 200) + ")"
}

// Authorize implements auth.OAuthHandler: the upstream refused the
// exchanged token (401: expired or revoked early), so it is exchanged
// again, once, with the caller's current token; a 403 is a right the
// exchanged token lacks.
func (h *exchangeHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	status := fmt.Sprintf("the server answered %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	if resp.StatusCode == http.StatusForbidden {
		return h.fail(status+" to the exchanged token (it lacks a scope or a right)", nil)
	}
	sent := strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer ")
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tok != nil && h.tok.AccessToken != sent { // exchanged again meanwhile
		return nil
	}
	if _, err := h.exchangeLocked(); err != nil {
		var ae *AuthError
		if errors.As(err, &ae) {
			ae.Reason = status + ", and " + ae.Reason
		}
		return err
	}
	return nil
}
