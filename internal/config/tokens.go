package config

import (
	"maps"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// This file decodes the keys of per-user upstream credentials:
//
//	[tokens]                          # where OAuth credentials are kept
//	dir = "~/.local/state/manifold/tokens"
//	key = "${file:token.key}"         # at least 32 bytes; encrypts them at rest
//
//	[servers.notes]
//	url = "https://notes.example.com/mcp"
//	auth = "oauth"                    # Manifold is the server's OAuth 2.1 client
//	credentials = "identity"          # each caller's own token ("service": one for all)
//	[servers.notes.oauth]             # all optional
//	client_id = "manifold"            # registered client; else CIMD, else dynamic registration
//	client_secret = "${file:notes.secret}"
//	client_metadata_url = "https://manifold.example.com/client.json"
//	scopes = ["notes.read"]
//	redirect_port = 8976              # loopback redirect listener of `manifold login`
//
//	[servers.wiki]                    # token exchange (RFC 8693)
//	url = "https://wiki.example.com/mcp"
//	auth = "oauth"
//	credentials = "exchange"          # each caller's token, exchanged at the team's IdP
//	[servers.wiki.oauth]
//	token_url = "https://idp.example.com/token"   # the IdP's token endpoint (required)
//	client_id = "manifold"                        # Manifold's client at the IdP (required)
//	client_secret = "${file:idp.secret}"
//	audience = "https://wiki.example.com"         # optional; else resource
//	resource = "https://wiki.example.com/mcp"     # optional; else url
//	scopes = ["wiki.read"]

// Tokens is the [tokens] table: the store of OAuth credentials.
type Tokens struct {
	// Dir is the folder of the credential files (absolute); empty when
	// absent: [DefaultTokenDir].
	Dir string
	// Key encrypts them (at least 32 bytes); empty when absent, which is
	// an error for a server with auth = "oauth" only when it is used.
	Key string
}

// MinTokenKeyLen is the shortest [tokens] key accepted.
const MinTokenKeyLen = 32

// OAuthClient is a server's OAuth client settings ([servers.NAME.oauth]).
type OAuthClient struct {
	ClientID          string
	ClientSecret      string
	ClientMetadataURL string
	Scopes            []string
	// RedirectPort is the loopback port of the login's redirect listener;
	// 0: any free port.
	RedirectPort int
	// Exchange is set by credentials = "exchange": each caller's own
	// downstream token is exchanged (RFC 8693) at TokenURL for the
	// server's, naming it by Audience and Resource (empty: the server's
	// URL).
	Exchange bool
	TokenURL string
	Audience string
	Resource string
}

// Values of Server.Credentials.
const (
	CredentialsService  = "service"
	CredentialsIdentity = "identity"
	CredentialsExchange = "exchange"
)

func (d *decoder) tokens(root *table, cfg *Config) Tokens {
	var tk Tokens
	t, ok := root.table("tokens")
	if !ok {
		return tk
	}
	if dir, ok := t.str("dir"); ok {
		if dir == "" {
			t.errorf("dir", `dir is empty; write the folder that keeps the credentials, or remove the key for the default`)
		} else {
			tk.Dir = resolve(cfg.Dir, expandHome(dir))
		}
	}
	if key, ok := t.str("key"); ok {
		if len(key) < MinTokenKeyLen {
			t.errorf("key", `the key is %d bytes long; it must be at least %d: write key = "${file:token.key}" with the output of `+"`openssl rand -base64 32`"+` in that file`, len(key), MinTokenKeyLen)
		} else {
			tk.Key = key
			d.recordSecret(key, "[tokens] key")
		}
	}
	t.finish()
	return tk
}

func expandHome(p string) string {
	if rest, ok := cutHome(p); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}

func cutHome(p string) (string, bool) {
	if p == "~" {
		return "", true
	}
	if len(p) > 2 && p[:2] == "~/" {
		return p[2:], true
	}
	return "", false
}

// DefaultTokenDir is the folder of the credentials when [tokens] dir is
// absent: $XDG_STATE_HOME/manifold/tokens, else
// ~/.local/state/manifold/tokens.
func DefaultTokenDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "manifold", "tokens")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "manifold", "tokens")
	}
	return filepath.Join(os.TempDir(), "manifold-tokens")
}

// serverOAuth decodes auth, credentials and [servers.NAME.oauth].
func (d *decoder) serverOAuth(t *table, s *Server) {
	mode, modeOK := t.str("auth")
	if modeOK {
		switch mode {
		case "none":
		case "oauth":
			s.OAuth = &OAuthClient{}
		default:
			t.errorf("auth", `%q is not an auth mode; write "oauth" (Manifold logs in to the server with OAuth 2.1: `+"`manifold login %s`"+`) or "none" (the default; headers may still carry a static token)`, mode, s.Name)
		}
	}
	exchange := false
	if c, ok := t.str("credentials"); ok {
		switch c {
		case CredentialsService:
		case CredentialsIdentity:
			s.PerIdentity = true
		case CredentialsExchange:
			s.PerIdentity, exchange = true, true
		default:
			t.errorf("credentials", `%q is not a credentials mode; write "service" (one credential for every caller, the default), "identity" (each caller's own, from `+"`manifold login %s --as IDENTITY`"+`) or "exchange" (each caller's token exchanged at the identity provider, RFC 8693)`, c, s.Name)
		}
		if s.OAuth == nil && (c == CredentialsIdentity || c == CredentialsExchange) {
			t.errorf("credentials", `credentials = %q needs auth = "oauth"; add it`, c)
		}
	}
	if o, ok := t.tableOf("oauth", `a table such as { client_id = "manifold", scopes = ["read"] }`); ok {
		if s.OAuth == nil {
			t.errorf("oauth", `[servers.%s.oauth] needs auth = "oauth"; add it`, s.Name)
		}
		var c OAuthClient
		c.ClientID, _ = o.str("client_id")
		c.ClientSecret, _ = o.str("client_secret")
		c.ClientMetadataURL, _ = o.str("client_metadata_url")
		c.Scopes, _ = o.strs("scopes")
		c.TokenURL, _ = o.str("token_url")
		c.Audience, _ = o.str("audience")
		c.Resource, _ = o.str("resource")
		for _, k := range []string{"token_url", "resource"} {
			if v, _ := o.str(k); v != "" && !httpsOrLoopback(v) {
				o.errorf(k, `%q is not an https URL (http only for localhost)`, v)
			}
		}
		if p, ok := o.integer("redirect_port"); ok {
			if p < 0 || p > 65535 {
				o.errorf("redirect_port", "%d is not a port; use 1 to 65535, or 0 (the default) for any free port", p)
			} else {
				c.RedirectPort = int(p)
			}
		}
		if c.ClientSecret != "" && c.ClientID == "" {
			o.errorf("client_secret", "client_secret needs client_id; add the client's id")
		}
		if c.ClientSecret != "" {
			d.recordSecret(c.ClientSecret, "client_secret")
		}
		if !exchange {
			for _, k := range []string{"token_url", "audience", "resource"} {
				if o.has(k) {
					o.errorf(k, `%s is for token exchange; add credentials = "exchange" to [servers.%s], or remove it`, k, s.Name)
				}
			}
		}
		o.finish()
		if s.OAuth != nil {
			*s.OAuth = c
		}
	}
	if exchange && s.OAuth != nil {
		s.OAuth.Exchange = true
		switch {
		case s.OAuth.TokenURL == "":
			t.errorf("credentials", `credentials = "exchange" needs the identity provider's token endpoint: add [servers.%s.oauth] token_url = "https://idp.example.com/token"`, s.Name)
		case s.OAuth.ClientID == "":
			t.errorf("credentials", `credentials = "exchange" needs Manifold's client at the identity provider: add [servers.%s.oauth] client_id (and client_secret)`, s.Name)
		}
	}
	if s.OAuth != nil {
		if t.has("command") {
			t.errorf("auth", `auth = "oauth" is only for a remote server (one with url); remove it`)
		}
		if tr, _ := t.raw("transport"); tr == TransportSSE {
			t.errorf("auth", `auth = "oauth" needs the streamable transport; remove transport = "sse"`)
		}
	}
}

// serverIdentities decodes [servers.NAME.identities."user:SUBJECT"] (or
// "key:NAME") env.
func (d *decoder) serverIdentities(t *table, s *Server) {
	ids, ok := t.tableOf("identities", `a table such as [servers.NAME.identities."user:alice"] with env = { KEY = "value" }`)
	if !ok {
		return
	}
	if !s.PerIdentity || t.has("url") {
		t.errorf("identities", `identities are the environments of a stdio server with isolation = "identity"; add isolation = "identity", or remove the table`)
	}
	s.Identities = make(map[string]map[string]string)
	for _, name := range d.inDocumentOrder(ids) {
		it, ok := ids.tableOf(name, `a table with env = { KEY = "value" }`)
		if !ok {
			continue
		}
		sub, ok := strings.CutPrefix(name, "user:")
		if !ok {
			sub, ok = strings.CutPrefix(name, "key:")
		}
		if !ok || sub == "" {
			ids.errorf(name, `%q is not an identity; write "user:SUBJECT" (the sub of the caller's token) or "key:NAME" (the name of its API key)`, name)
		}
		env, _ := it.strMap("env")
		for _, k := range slices.Sorted(maps.Keys(env)) {
			d.recordSecret(env[k], "the env of identity "+name) // per-user credentials, whatever their name
		}
		it.finish()
		s.Identities[name] = env
	}
	ids.finish()
}

// httpsOrLoopback reports whether raw is an https URL, or http on a
// loopback host.
func httpsOrLoopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		ip := net.ParseIP(h)
		return h == "localhost" || ip != nil && ip.IsLoopback()
	}
	return false
}
