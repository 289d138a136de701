package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/internal/tokenstore"
	"github.com/manifold-mcp/manifold/upstream"
)

// cmdLogin runs the OAuth 2.1 authorization-code flow (PKCE) for a server
// with auth = "oauth" and keeps the credential, encrypted, in the [tokens]
// store: the service credential, or with --as that of one identity (whose
// calls then carry it when the server has credentials = "identity").
func cmdLogin(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("login", "login SERVER [--as IDENTITY]", levelOneShot, stderr, &c)
	as := fs.String("as", "", `whose credential this is, as the who-rules name callers: "user:SUBJECT" (a token's sub) or "key:NAME" (an API key); empty: the service credential, used for the catalog, health checks and every caller of a server with credentials = "service"`)
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the browser")
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	s, cfg, store, err := oauthServer("login", c, pos)
	if err != nil {
		return err
	}
	identity, err := identityArg(*as)
	if err != nil {
		return err
	}
	red := redact.New(cfg.Secrets...)
	if err := upstream.Login(ctx, loginOptions(s, identity, store, *timeout, nil, stderr)); err != nil {
		return red.Error(err)
	}
	fmt.Fprintf(stdout, "Logged in to %q%s; the credential is kept encrypted in %s.\n", s.Name, forWhom(identity), store.Dir())
	return nil
}

// cmdLogout revokes a stored credential at the authorization server (RFC
// 7009, when its metadata names a revocation endpoint) and forgets it. A
// revocation that fails, or that the server does not offer, still forgets
// it, and says so.
func cmdLogout(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
	var c common
	fs := newFlags("logout", "logout SERVER [--as IDENTITY]", levelOneShot, stderr, &c)
	as := fs.String("as", "", `whose credential to forget ("user:SUBJECT" or "key:NAME"); empty: the service credential`)
	pos, ok, err := parse(fs, args)
	if !ok {
		return err
	}
	s, cfg, store, err := oauthServer("logout", c, pos)
	if err != nil {
		return err
	}
	identity, err := identityArg(*as)
	if err != nil {
		return err
	}
	cred, lerr := store.Load(s.Name, identity)
	if errors.Is(lerr, tokenstore.ErrNotFound) {
		fmt.Fprintf(stdout, "No credential of %q%s was stored.\n", s.Name, forWhom(identity))
		return nil
	}
	var revoked string
	if lerr != nil {
		revoked = "it could not be read, so it was not revoked at the authorization server (" + lerr.Error() + ")"
	} else {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		rerr := upstream.Revoke(rctx, cred, &http.Client{Timeout: 30 * time.Second})
		cancel()
		switch {
		case rerr == nil:
			revoked = "revoked it at the authorization server"
		case errors.Is(rerr, upstream.ErrNoRevocation):
			revoked = "the authorization server offers no revocation endpoint, so its grant stays until it expires; revoke it there if it must end now"
		default:
			revoked = "the authorization server did not revoke it (" + redact.New(cfg.Secrets...).String(rerr.Error()) + "), so its grant may stay until it expires; revoke it there if it must end now"
		}
	}
	if _, err := store.Delete(s.Name, identity); err != nil {
		return fmt.Errorf("logout %q: %s, but deleting it failed: %w", s.Name, revoked, err)
	}
	// A running proxy rereads the store when the server next refuses the
	// forgotten token.
	fmt.Fprintf(stdout, "Forgot the credential of %q%s; %s. A running manifold stops using it at the next refusal, or restart it.\n", s.Name, forWhom(identity), revoked)
	return nil
}

// loginOptions are those of a login of identity at s, asking also for
// extra scopes, that shows the link on stderr.
func loginOptions(s config.Server, identity string, store *tokenstore.Store, timeout time.Duration, extra []string, stderr io.Writer) upstream.LoginOptions {
	clientID, clientSecret := s.OAuth.ClientID, s.OAuth.ClientSecret
	if s.OAuth.Exchange { // those are Manifold's client at the identity provider, for the exchange
		clientID, clientSecret = "", ""
	}
	return upstream.LoginOptions{
		Name: s.Name, URL: s.URL, Identity: identity, Store: store,
		ClientID: clientID, ClientSecret: clientSecret, ClientMetadataURL: s.OAuth.ClientMetadataURL,
		Scopes: s.OAuth.Scopes, Extra: extra, RedirectPort: s.OAuth.RedirectPort, Timeout: timeout,
		Client: &http.Client{Timeout: 30 * time.Second},
		Prompt: func(link string) {
			fmt.Fprintf(stderr, "To authorize Manifold at %q%s, open this link in a browser:\n\n  %s\n\nWaiting for the browser (up to %v)...\n", s.Name, forWhom(identity), link, timeout)
		},
	}
}

func forWhom(identity string) string {
	if identity == "" {
		return " (service credential)"
	}
	return " for " + identity
}

// identityArg checks the --as value: "user:SUBJECT" or "key:NAME", as the
// who-rules spell callers.
func identityArg(as string) (string, error) {
	if as == "" {
		return "", nil
	}
	sub, ok := strings.CutPrefix(as, "user:")
	if !ok {
		sub, ok = strings.CutPrefix(as, "key:")
	}
	if !ok || sub == "" || strings.ContainsFunc(sub, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", usageError(`--as %q: write the identity as the who-rules do: "user:SUBJECT" (the sub of the caller's token, such as --as user:alice@example.com) or "key:NAME" (the name of its API key)`, as)
	}
	return as, nil
}

// oauthServer loads the config and returns the one server named in pos,
// which must have auth = "oauth", and the token store.
func oauthServer(cmd string, c common, pos []string) (config.Server, *config.Config, *tokenstore.Store, error) {
	if len(pos) != 1 {
		return config.Server{}, nil, nil, argError(cmd, "%d arguments %q; want one server name", len(pos), pos)
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return config.Server{}, nil, nil, err
	}
	var names []string
	for _, s := range cfg.Servers {
		if s.OAuth != nil {
			names = append(names, s.Name)
		}
		if s.Name != pos[0] {
			continue
		}
		if s.OAuth == nil {
			return config.Server{}, nil, nil, fmt.Errorf("%s: server %q does not log in with OAuth; add auth = \"oauth\" to [servers.%s]", cfg.Path, s.Name, s.Name)
		}
		store, err := tokenStore(cfg)
		if err != nil {
			return config.Server{}, nil, nil, err
		}
		return s, cfg, store, nil
	}
	hint := "no server has auth = \"oauth\""
	if len(names) > 0 {
		hint = "servers with auth = \"oauth\": " + strings.Join(names, ", ")
	}
	return config.Server{}, nil, nil, fmt.Errorf("%s: no server %q (%s)", cfg.Path, pos[0], hint)
}

// errNoTokenKey says how to configure the token store.
var errNoTokenKey = errors.New(`no [tokens] key is set: add [tokens] key = "${file:token.key}" to the config, with the output of ` + "`openssl rand -base64 32`" + ` in that file (mode 0600)`)

// tokenStore opens the [tokens] store of cfg.
func tokenStore(cfg *config.Config) (*tokenstore.Store, error) {
	if cfg.Tokens.Key == "" {
		return nil, fmt.Errorf("%s: %w", cfg.Path, errNoTokenKey)
	}
	dir := cfg.Tokens.Dir
	if dir == "" {
		dir = config.DefaultTokenDir()
	}
	return tokenstore.Open(dir, []byte(cfg.Tokens.Key))
}
