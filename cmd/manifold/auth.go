package main

import (
	"log/slog"
	"net"

	"github.com/manifold-mcp/manifold/internal/auth"
	"github.com/manifold-mcp/manifold/internal/config"
)

// checkRemote refuses --allow-remote without authentication, unless the
// operator says --insecure-no-auth, and authentication on a host that is not
// loopback without auth.resource (the URL clients use is not known then),
// before anything listens.
func checkRemote(cfg *config.Config, allowRemote, insecureNoAuth bool, host string) error {
	if allowRemote && !cfg.Auth.Enabled() && !insecureNoAuth {
		return usageError("--allow-remote without authentication: anyone who can reach the address could use every tool. Configure [auth] in %s (issuer for OAuth tokens, or api_keys_file for API keys; see docs/teams.md, \"Authentication\"), or pass --insecure-no-auth as well to serve without authentication behind a network you trust", cfg.Path)
	}
	if ip := net.ParseIP(host); cfg.Auth.Enabled() && cfg.Auth.Resource == "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError("--http host %q is not a loopback address, so the URL clients use for it is not known: set auth.resource in %s to it, like \"https://manifold.example.com/mcp\" (tokens must be issued for it)", host, cfg.Path)
	}
	return nil
}

// httpAuthenticator returns the authenticator of [auth] for the endpoint
// listening at addr (the listener's address), or nil when [auth] is absent.
func httpAuthenticator(cfg *config.Config, addr string, log *slog.Logger) (*auth.Authenticator, error) {
	a := cfg.Auth
	if !a.Enabled() {
		return nil, nil
	}
	resource := a.Resource
	if resource == "" { // a loopback listener (checkRemote)
		resource = "http://" + addr + "/mcp"
	}
	return auth.New(auth.Options{
		Resource:       resource,
		Issuer:         a.Issuer,
		Audiences:      a.Audiences,
		JWKSURL:        a.JWKSURL,
		Scopes:         a.Scopes,
		Algorithms:     a.Algorithms,
		Leeway:         a.Leeway,
		JWKSMinRefresh: a.JWKSMinRefresh,
		Keys:           authKeys(a.APIKeys),
		Logger:         log.With("component", "auth"),
	})
}

// authKeys converts the keys of the API keys file.
func authKeys(keys []config.APIKey) []auth.Key {
	out := make([]auth.Key, len(keys))
	for i, k := range keys {
		out[i] = auth.Key{Name: k.Name, Hash: k.SHA256, Groups: k.Groups}
	}
	return out
}
