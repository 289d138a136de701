package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"
)

// Auth is the [auth] table: how clients of `manifold serve --http`
// authenticate. It is off (the zero Auth) when the table is absent.
type Auth struct {
	// Issuer is the authorization server whose JWT access tokens are
	// accepted (auth.issuer), exactly as their iss claim; empty: none.
	Issuer string
	// Resource is the public URL of the MCP endpoint (auth.resource), such
	// as "https://manifold.example.com/mcp"; empty: http://LISTEN/mcp.
	Resource string
	// Audiences are the aud values accepted (auth.audience, a string or an
	// array); empty: Resource.
	Audiences []string
	// JWKSURL is the issuer's key set (auth.jwks_url); empty: from the
	// issuer's metadata.
	JWKSURL string
	// Scopes are the scopes every token must carry (auth.scopes).
	Scopes []string
	// Algorithms are the JWS algorithms accepted (auth.algorithms); empty:
	// the asymmetric ones.
	Algorithms []string
	// Leeway is the clock skew allowed on exp and nbf (auth.leeway); zero:
	// the default (30s).
	Leeway time.Duration
	// JWKSMinRefresh is the least time between two fetches of the JWKS
	// (auth.jwks_min_refresh); zero: the default (30s).
	JWKSMinRefresh time.Duration
	// APIKeysFile is the absolute path of the API keys file
	// (auth.api_keys_file); empty: no API keys.
	APIKeysFile string
	// APIKeys are the keys of APIKeysFile, as [Load] read them (hashed).
	APIKeys []APIKey
}

// Enabled reports whether clients must authenticate.
func (a Auth) Enabled() bool { return a.Issuer != "" || a.APIKeysFile != "" }

// APIKey is one entry of the API keys file: a name, the SHA-256 of the key
// (never the key), and the groups of whoever presents it.
type APIKey struct {
	Name   string
	SHA256 [sha256.Size]byte
	Groups []string
}

// auth decodes the [auth] table.
func (d *decoder) auth(root *table, cfg *Config) Auth {
	var a Auth
	t, ok := root.tableOf("auth", "a table such as [auth] with issuer or api_keys_file")
	if !ok {
		return a
	}
	if s, ok := t.str("issuer"); ok {
		if checkURL(s, true) {
			a.Issuer = s
		} else {
			t.errorf("issuer", `%q is not an https URL; write the issuer exactly as the iss claim of its tokens, like "https://idp.example.com/realms/team" (http only for localhost)`, s)
		}
	}
	if s, ok := t.str("resource"); ok {
		if u, err := url.Parse(s); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.RawQuery == "" && u.Fragment == "" {
			a.Resource = s
		} else {
			t.errorf("resource", `%q is not an http(s) URL without query or fragment; write the URL clients use for the MCP endpoint, like "https://manifold.example.com/mcp"`, s)
		}
	}
	if v, ok := t.value("audience"); ok {
		switch v := v.(type) {
		case string:
			a.Audiences = []string{v}
		case []any:
			a.Audiences, _ = t.strs("audience")
		default:
			t.mismatch("audience", v, "a string or an array of strings", `write the aud value of the tokens, like "https://manifold.example.com/mcp"`)
		}
		if slices.Contains(a.Audiences, "") {
			t.errorf("audience", "an audience is empty; write the aud value of the tokens, or remove the key to use auth.resource")
		}
	}
	if s, ok := t.str("jwks_url"); ok {
		if checkURL(s, true) {
			a.JWKSURL = s
		} else {
			t.errorf("jwks_url", `%q is not an https URL; write the issuer's JWKS URL, like "https://idp.example.com/.well-known/jwks.json", or remove the key to find it in the issuer's metadata`, s)
		}
	}
	if scopes, ok := t.strs("scopes"); ok {
		for _, s := range scopes {
			if s == "" || strings.ContainsAny(s, " \t\"\\") {
				t.errorf("scopes", `%q is not a scope; write each scope as its own string, like ["mcp:tools"]`, s)
			}
		}
		a.Scopes = scopes
	}
	if algs, ok := t.strs("algorithms"); ok {
		for _, s := range algs {
			if !slices.Contains(jwsAlgorithms, s) {
				t.errorf("algorithms", "%q is not accepted; use asymmetric algorithms among %s (none and HS* are never accepted)", s, strings.Join(jwsAlgorithms, ", "))
			}
		}
		a.Algorithms = algs
	}
	a.Leeway = t.duration("leeway", 0)
	if a.Leeway < 0 || a.Leeway > 5*time.Minute {
		t.errorf("leeway", "%s is out of range; use at most 5m, like \"30s\"", a.Leeway)
	}
	a.JWKSMinRefresh = t.duration("jwks_min_refresh", 0)
	if s, ok := t.str("api_keys_file"); ok {
		if s == "" {
			t.errorf("api_keys_file", "is empty; write the path of the API keys file, or remove the key")
		} else {
			a.APIKeysFile = resolve(cfg.Dir, s)
		}
	}
	switch {
	case !t.has("issuer") && !t.has("api_keys_file"):
		t.errorHere("sets neither issuer nor api_keys_file, so no client could authenticate; set one of them, or remove [auth]")
	case !t.has("issuer"):
		for _, k := range []string{"audience", "jwks_url", "scopes", "algorithms"} {
			if t.has(k) {
				t.errorf(k, "applies only to the tokens of an issuer, and auth.issuer is not set; set auth.issuer, or remove auth.%s", k)
			}
		}
	}
	t.finish()
	return a
}

// jwsAlgorithms are the JWS algorithms auth.algorithms may name (internal/auth.DefaultAlgorithms).
var jwsAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// checkURL reports whether s is an https URL (or, when loopbackHTTP, an http
// one of a loopback host) with a host and no fragment.
func checkURL(s string, loopbackHTTP bool) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.Fragment != "" || u.User != nil {
		return false
	}
	if u.Scheme == "https" {
		return true
	}
	h := u.Hostname()
	return loopbackHTTP && u.Scheme == "http" && (h == "localhost" || h == "127.0.0.1" || h == "::1")
}

// LoadAPIKeys reads an API keys file: one table per key, named by the key's
// name, with the SHA-256 of the key in hex (sha256) or the name of an
// environment variable that holds the key (env, hashed at once), and
// optional groups:
//
//	[keys.ci-bot]
//	sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
//	groups = ["ci"]
//
//	[keys.alice]
//	env = "ALICE_MANIFOLD_KEY"
//	groups = ["eng"]
//
// lookup reads the environment (os.LookupEnv). The error joins every
// problem, each with file:line.
func LoadAPIKeys(path string, lookup func(string) (string, bool)) ([]APIKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: cannot read the API keys file (auth.api_keys_file): %w", path, err)
	}
	d, top, err := newDecoder(path, data)
	if err != nil {
		return nil, err
	}
	d.lookup = lookup
	root := &table{d: d, fields: top}
	var keys []APIKey
	if kt, ok := root.tableOf("keys", "a table of keys such as [keys.ci-bot] with sha256 = \"…\""); ok {
		byHash := map[[sha256.Size]byte]string{}
		for _, name := range d.inDocumentOrder(kt) {
			et, ok := kt.tableOf(name, `a table such as [keys.NAME] with sha256 = "…" or env = "VAR"`)
			if !ok {
				continue
			}
			k := APIKey{Name: name}
			good := true
			if strings.TrimSpace(name) == "" || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				et.errorHere("the key name %q is empty or has control characters; name the key after who uses it, like [keys.ci-bot]", name)
				good = false
			}
			hexSum, hasSum := et.str("sha256")
			env, hasEnv := et.str("env")
			switch {
			case hasSum == hasEnv:
				et.errorHere(`needs exactly one of sha256 (the SHA-256 of the key in hex: printf %%s "$KEY" | sha256sum) and env (the name of an environment variable holding the key)`)
				good = false
			case hasSum:
				b, err := hex.DecodeString(strings.ToLower(hexSum))
				if err != nil || len(b) != sha256.Size {
					et.errorf("sha256", `is not a SHA-256 in hex (64 characters); write the output of printf %%s "$KEY" | sha256sum`)
					good = false
				} else {
					k.SHA256 = [sha256.Size]byte(b)
				}
			case hasEnv:
				plain, ok := lookup(env)
				switch {
				case !ok:
					et.errorf("env", "environment variable %s is not set; set it to the key, or write sha256 instead", env)
					good = false
				case len(plain) < 16:
					et.errorf("env", "environment variable %s holds a key shorter than 16 characters; use a long random key, such as the output of openssl rand -hex 32", env)
					good = false
				default:
					k.SHA256 = sha256.Sum256([]byte(plain))
				}
			}
			if groups, ok := et.strs("groups"); ok {
				for _, g := range groups {
					if g == "" {
						et.errorf("groups", "a group is empty; remove it")
						good = false
					}
				}
				k.Groups = groups
			}
			et.finish()
			if !good {
				continue
			}
			if other, dup := byHash[k.SHA256]; dup {
				et.errorHere("is the same key as %q; give every client a key of its own", other)
				continue
			}
			byHash[k.SHA256] = name
			keys = append(keys, k)
		}
		kt.finish()
	}
	root.finish()
	if len(d.probs) > 0 {
		slices.SortStableFunc(d.probs, func(a, b *problem) int { return a.off - b.off })
		errs := make([]error, len(d.probs))
		for i, p := range d.probs {
			errs[i] = p
		}
		return nil, errors.Join(errs...)
	}
	return keys, nil
}
