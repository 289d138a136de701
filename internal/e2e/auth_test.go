package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// End-to-end tests of downstream authentication (issue 15, part 1): the
// built binary serving --http as an OAuth 2.1 protected resource, against a
// test issuer on loopback (keys generated here, JWKS served here, tokens
// signed with go-jose) and an API keys file.

// testIssuer is an authorization server as far as a resource server sees
// one: metadata (RFC 8414) and a JWKS, whose keys can be rotated and whose
// JWKS can be made hostile.
type testIssuer struct {
	t    *testing.T
	url  string
	mu   sync.Mutex
	keys map[string]*rsa.PrivateKey // by kid; guarded by mu
	pub  []string                   // kids published in the JWKS; guarded by mu
	mode atomic.Value               // "" (good), "junk", "oct" or "huge"
	hits atomic.Int64               // JWKS fetches
}

func newTestIssuer(t *testing.T) *testIssuer {
	t.Helper()
	is := &testIssuer{t: t, keys: map[string]*rsa.PrivateKey{}}
	is.mode.Store("")
	is.addKey("k1", true)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.url, "jwks_uri": is.url + "/jwks",
			"authorization_endpoint": is.url + "/authorize", "token_endpoint": is.url + "/token",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		is.hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch is.mode.Load().(string) {
		case "junk":
			_, _ = io.WriteString(w, `{"keys": [<<<`)
			return
		case "oct": // only keys that must never be used: a shared secret, a tiny RSA key
			_, _ = io.WriteString(w, `{"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "k3-oct"}, {"kty":"RSA","n":"AQAB","e":"AQAB","kid":"k3-oct"}]}`)
			return
		case "huge":
			_, _ = io.WriteString(w, `{"keys": [`)
			chunk := strings.Repeat(" ", 64<<10)
			for range 64 { // 4 MiB
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			_, _ = io.WriteString(w, `]}`)
			return
		}
		is.mu.Lock()
		var set jose.JSONWebKeySet
		for _, kid := range is.pub {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &is.keys[kid].PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
		}
		is.mu.Unlock()
		_ = json.NewEncoder(w).Encode(set)
	})
	is.url = serveLoopback(t, mux) // the handlers read it when called
	return is
}

// addKey generates a key; published puts it in the JWKS.
func (is *testIssuer) addKey(kid string, published bool) {
	is.t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		is.t.Fatal(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	is.keys[kid] = k
	if published {
		is.pub = append(is.pub, kid)
	}
}

// publish makes the JWKS hold exactly kids.
func (is *testIssuer) publish(kids ...string) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.pub = kids
}

// tokenClaims are the claims of a test token; zero fields are left out.
type tokenClaims struct {
	Iss   string   `json:"iss,omitempty"`
	Sub   string   `json:"sub,omitempty"`
	Aud   string   `json:"aud,omitempty"`
	Exp   int64    `json:"exp,omitempty"`
	Nbf   int64    `json:"nbf,omitempty"`
	Iat   int64    `json:"iat,omitempty"`
	Scope string   `json:"scope,omitempty"`
	Grps  []string `json:"groups,omitempty"`
}

// good returns valid claims for sub and the resource aud.
func (is *testIssuer) good(sub, aud string) tokenClaims {
	now := time.Now()
	return tokenClaims{Iss: is.url, Sub: sub, Aud: aud, Exp: now.Add(10 * time.Minute).Unix(), Iat: now.Unix(), Scope: "mcp other", Grps: []string{"eng"}}
}

// sign signs c (a tokenClaims, or any claims that encode to JSON) with the
// key kid, RS256.
func (is *testIssuer) sign(kid string, c any) string {
	is.t.Helper()
	is.mu.Lock()
	k := is.keys[kid]
	is.mu.Unlock()
	return signWith(is.t, jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k, KeyID: kid}}, c)
}

func signWith(t *testing.T, key jose.SigningKey, c any) string {
	t.Helper()
	signer, err := jose.NewSigner(key, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(signer).Claims(c).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// unsigned is c as a JWT with alg none.
func unsigned(c tokenClaims) string {
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT", "kid": "k1"})
	p, _ := json.Marshal(c)
	return enc.EncodeToString(h) + "." + enc.EncodeToString(p) + "."
}

// bearer is an http.RoundTripper that sends a fixed Authorization header.
type bearerRT struct {
	token string
	base  http.RoundTripper
}

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// authedSession connects a go-sdk client to hp sending token.
func authedSession(t *testing.T, hp *httpProxy, name, token string) *mcp.ClientSession {
	t.Helper()
	cs, err := tryAuthedSession(t, hp, name, token, protocolVersion)
	if err != nil {
		t.Fatalf("connect as %s: %v", name, err)
	}
	return cs
}

// tryAuthedSession connects a go-sdk client named name to hp sending token,
// asking for the protocol version, and returns the error of a refusal.
func tryAuthedSession(t *testing.T, hp *httpProxy, name, token, version string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Timeout: testTimeout, Transport: bearerRT{token, http.DefaultTransport}}
	tr := &mcp.StreamableClientTransport{Endpoint: hp.endpoint(), HTTPClient: hc}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(testCtx(t), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, nil
}

// initializeBody is an initialize request.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post POSTs body to url with the given Authorization header ("" for none)
// and extra headers, and returns the response with its body read.
func authPost(t *testing.T, url, authz, body string, extra ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	return authDo(t, req)
}

func authGet(t *testing.T, url, authz string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	return authDo(t, req)
}

func authDo(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: testTimeout}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(b)
}

// recordingUpstream is a remote MCP server (streamable HTTP, go-sdk) on
// loopback with one tool, remote_echo, that records the Authorization
// headers of every request it gets.
type recordingUpstream struct {
	url   string
	mu    sync.Mutex
	authz []string // Authorization values seen (one per request that had one); guarded by mu
	reqs  int      // requests seen; guarded by mu
}

func newRecordingUpstream(t *testing.T) *recordingUpstream {
	t.Helper()
	u := &recordingUpstream{}
	s := mcp.NewServer(&mcp.Implementation{Name: "remote", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "remote_echo", Description: "Echoes message."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Message string `json:"message"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "remote: " + in.Message}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	u.url = serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.reqs++
		u.authz = append(u.authz, r.Header.Values("Authorization")...)
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	})) + "/mcp"
	return u
}

// apiKey and its hash, for the keys file.
func keyLine(name, key string, groups ...string) string {
	sum := sha256.Sum256([]byte(key))
	return fmt.Sprintf("[keys.%s]\nsha256 = %q\ngroups = %s\n", name, hex.EncodeToString(sum[:]), tomlStrs(groups))
}

// challengeParams parses a Bearer challenge's parameters.
func challengeParams(t *testing.T, h string) map[string]string {
	t.Helper()
	rest, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		t.Fatalf("WWW-Authenticate %q is not a Bearer challenge", h)
	}
	out := map[string]string{}
	for rest != "" {
		k, v, ok := strings.Cut(rest, `="`)
		if !ok {
			t.Fatalf("WWW-Authenticate %q: cannot parse at %q", h, rest)
		}
		end := strings.IndexByte(v, '"')
		if end < 0 {
			t.Fatalf("WWW-Authenticate %q: unterminated value", h)
		}
		out[strings.TrimSpace(k)] = v[:end]
		rest = strings.TrimPrefix(strings.TrimSpace(v[end+1:]), ",")
		rest = strings.TrimSpace(rest)
	}
	return out
}

// TestAuthJWTAndAPIKeys drives one manifold with [auth] (a test issuer, a
// required scope, an API keys file) through every way a token can be wrong,
// a valid token and API key with the go-sdk client, the metadata, the
// probes and status, session binding, key rotation at the issuer, a hostile
// JWKS, API key rotation by reload, and an upstream that must never see the
// client's token.
func TestAuthJWTAndAPIKeys(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	up := newRecordingUpstream(t)
	const aliceKey = "e2e-api-key-alice-0123456789abcdef"
	const bobKey = "e2e-api-key-bob-0123456789abcdef01"
	cfg := writeConfig(t, `
[audit]
file = "audit.jsonl"

[auth]
issuer = `+tomlStr(is.url)+`
scopes = ["mcp"]
api_keys_file = "keys.toml"
jwks_min_refresh = "100ms"
`+fixture("local", nil)+`
[servers.remote]
url = `+tomlStr(up.url)+`
`)
	dir := filepath.Dir(cfg)
	keys := filepath.Join(dir, "keys.toml")
	if err := os.WriteFile(keys, []byte(keyLine("alice-key", aliceKey, "eng")), 0o600); err != nil {
		t.Fatal(err)
	}
	hp := startHTTP(t, cfg)
	aud := hp.endpoint()
	prm := "http://" + hp.addr + "/.well-known/oauth-protected-resource/mcp"

	t.Run("metadata", func(t *testing.T) {
		for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			resp, body := authGet(t, "http://"+hp.addr+path, "")
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET %s: %s %s", path, resp.Status, body)
			}
			var m struct {
				Resource string   `json:"resource"`
				AS       []string `json:"authorization_servers"`
				Scopes   []string `json:"scopes_supported"`
				Methods  []string `json:"bearer_methods_supported"`
			}
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatalf("GET %s: %v: %s", path, err, body)
			}
			want := struct {
				Resource string   `json:"resource"`
				AS       []string `json:"authorization_servers"`
				Scopes   []string `json:"scopes_supported"`
				Methods  []string `json:"bearer_methods_supported"`
			}{aud, []string{is.url}, []string{"mcp"}, []string{"header"}}
			if diff := cmp.Diff(want, m); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", path, diff)
			}
		}
	})

	t.Run("probes open, status guarded", func(t *testing.T) {
		for _, path := range []string{"/healthz", "/readyz"} {
			if resp, body := authGet(t, "http://"+hp.addr+path, ""); resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s without a token: %s %s, want 200", path, resp.Status, body)
			}
		}
		for _, path := range []string{"/status", "/status/clients"} {
			resp, body := authGet(t, "http://"+hp.addr+path, "")
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), prm) {
				t.Errorf("GET %s without a token: %s (WWW-Authenticate %q) %s, want 401 with the metadata", path, resp.Status, resp.Header.Get("WWW-Authenticate"), body)
			}
			if resp, body := authGet(t, "http://"+hp.addr+path, "Bearer "+aliceKey); resp.StatusCode != http.StatusOK {
				t.Errorf("GET %s with an API key: %s %s, want 200", path, resp.Status, body)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		other := is.good("alice", aud)
		other.Aud = "http://127.0.0.1:1/mcp"
		otherIss := is.good("alice", aud)
		otherIss.Iss = "http://127.0.0.1:2"
		expired := is.good("alice", aud)
		expired.Exp, expired.Iat = time.Now().Add(-10*time.Minute).Unix(), time.Now().Add(-20*time.Minute).Unix()
		early := is.good("alice", aud)
		early.Nbf = time.Now().Add(10 * time.Minute).Unix()
		noScope := is.good("alice", aud)
		noScope.Scope = "other"
		noExp := is.good("alice", aud)
		noExp.Exp = 0
		wrongKey, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		der, _ := x509.MarshalPKIXPublicKey(&is.keys["k1"].PublicKey)
		pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		for _, tc := range []struct {
			name   string
			authz  string
			status int
			code   string // the challenge's error; "" for none
		}{
			{name: "no header", authz: "", status: 401},
			{name: "basic scheme", authz: "Basic YWxpY2U6c2VjcmV0", status: 401},
			{name: "bearer without token", authz: "Bearer", status: 400, code: "invalid_request"},
			{name: "two tokens", authz: "Bearer a b", status: 400, code: "invalid_request"},
			{name: "expired", authz: "Bearer " + is.sign("k1", expired), status: 401, code: "invalid_token"},
			{name: "not yet valid", authz: "Bearer " + is.sign("k1", early), status: 401, code: "invalid_token"},
			{name: "no exp", authz: "Bearer " + is.sign("k1", noExp), status: 401, code: "invalid_token"},
			{name: "other audience", authz: "Bearer " + is.sign("k1", other), status: 401, code: "invalid_token"},
			{name: "other issuer", authz: "Bearer " + is.sign("k1", otherIss), status: 401, code: "invalid_token"},
			{name: "alg none", authz: "Bearer " + unsigned(is.good("alice", aud)), status: 401, code: "invalid_token"},
			{name: "wrong key", authz: "Bearer " + signWith(t, jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: wrongKey, KeyID: "k1"}}, is.good("alice", aud)), status: 401, code: "invalid_token"},
			{name: "HS256 with the public key", authz: "Bearer " + signWith(t, jose.SigningKey{Algorithm: jose.HS256, Key: jose.JSONWebKey{Key: pubPEM, KeyID: "k1"}}, is.good("alice", aud)), status: 401, code: "invalid_token"},
			{name: "HS256 with the DER key", authz: "Bearer " + signWith(t, jose.SigningKey{Algorithm: jose.HS256, Key: der}, is.good("alice", aud)), status: 401, code: "invalid_token"},
			{name: "missing scope", authz: "Bearer " + is.sign("k1", noScope), status: 403, code: "insufficient_scope"},
			{name: "wrong API key", authz: "Bearer " + strings.Repeat("z", 34), status: 401, code: "invalid_token"},
			{name: "huge token", authz: "Bearer " + strings.Repeat("a", 30<<10), status: 401, code: "invalid_token"},
			{name: "garbage JWT", authz: "Bearer a.b.c", status: 401, code: "invalid_token"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, body := authPost(t, hp.endpoint(), tc.authz, initializeBody)
				if resp.StatusCode != tc.status {
					t.Fatalf("status %s, want %d; body %s", resp.Status, tc.status, body)
				}
				ch := resp.Header.Values("WWW-Authenticate")
				if len(ch) != 1 {
					t.Fatalf("WWW-Authenticate %q, want one challenge", ch)
				}
				p := challengeParams(t, ch[0])
				if p["resource_metadata"] != prm || p["scope"] != "mcp" || p["error"] != tc.code {
					t.Errorf("challenge %q: want resource_metadata=%q, scope=\"mcp\", error=%q", ch[0], prm, tc.code)
				}
				if resp.Header.Get("Mcp-Session-Id") != "" {
					t.Errorf("a refused request got a session")
				}
			})
		}
	})

	var aliceSession string
	t.Run("valid token with the go-sdk client", func(t *testing.T) {
		cs := authedSession(t, hp, "alice-client", is.sign("k1", is.good("alice@example.com", aud)))
		aliceSession = cs.ID()
		res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "remote__remote_echo", Arguments: map[string]any{"message": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("call remote__remote_echo: %v %+v", err, res)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != "remote: hi" {
			t.Errorf("result %q", got)
		}
		if _, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: "local__echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
			t.Fatalf("call local__echo: %v", err)
		}
		// Status shows the client with its identity.
		resp, body := authGet(t, "http://"+hp.addr+"/status/clients", "Bearer "+aliceKey)
		var st struct {
			Clients []struct {
				Name, Identity string
			}
		}
		if err := json.Unmarshal([]byte(body), &st); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("GET /status/clients: %s %v %s", resp.Status, err, body)
		}
		var ids []string
		for _, c := range st.Clients {
			ids = append(ids, c.Name+" "+c.Identity)
		}
		if !slices.Contains(ids, "alice-client alice@example.com") {
			t.Errorf("GET /status/clients: clients %q, want alice-client with identity alice@example.com", ids)
		}
		// Bob's token cannot use alice's session.
		bob := is.sign("k1", is.good("bob", aud))
		resp, body = authPost(t, hp.endpoint(), "Bearer "+bob, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			"Mcp-Session-Id", aliceSession, "Mcp-Protocol-Version", protocolVersion)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("bob on alice's session: %s %s, want 403", resp.Status, body)
		}
		// Nor can an API key (another identity).
		resp, body = authPost(t, hp.endpoint(), "Bearer "+aliceKey, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			"Mcp-Session-Id", aliceSession, "Mcp-Protocol-Version", protocolVersion)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("an API key on alice's token's session: %s %s, want 403", resp.Status, body)
		}
		// Alice's refreshed token (same subject) still can.
		fresh := is.good("alice@example.com", aud)
		fresh.Iat++
		resp, body = authPost(t, hp.endpoint(), "Bearer "+is.sign("k1", fresh), `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
			"Mcp-Session-Id", aliceSession, "Mcp-Protocol-Version", protocolVersion)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("alice's new token on her session: %s %s, want 200", resp.Status, body)
		}
	})

	t.Run("status --url with MANIFOLD_TOKEN", func(t *testing.T) {
		cs := authedSession(t, hp, "alice-client", is.sign("k1", is.good("alice@example.com", aud)))
		if _, err := cs.ListTools(testCtx(t), nil); err != nil {
			t.Fatal(err)
		}
		run := func(token string) (string, error) {
			cmd := commandContext(testCtx(t), manifoldBin, "status", "--url", "http://"+hp.addr)
			cmd.Env = append(os.Environ(), "MANIFOLD_CONFIG=", "MANIFOLD_TOKEN="+token)
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		if out, err := run(""); err == nil || !strings.Contains(out, "MANIFOLD_TOKEN") {
			t.Errorf("status --url without a token: %v\n%s\nwant a failure naming MANIFOLD_TOKEN", err, out)
		}
		out, err := run(aliceKey)
		if err != nil || !strings.Contains(out, "IDENTITY") || !strings.Contains(out, "alice@example.com") {
			t.Errorf("status --url with an API key: %v\n%s\nwant the clients with their identities", err, out)
		}
	})

	t.Run("upstream never sees the client's token", func(t *testing.T) {
		up.mu.Lock()
		defer up.mu.Unlock()
		if up.reqs == 0 {
			t.Fatal("the remote upstream got no request")
		}
		if len(up.authz) != 0 {
			t.Errorf("the remote upstream got Authorization headers %q; the client's token must never be forwarded", up.authz)
		}
	})

	t.Run("audit has the identity", func(t *testing.T) {
		var got []string
		for _, l := range readAudit(t, filepath.Join(dir, "audit.jsonl")) {
			if l["method"] == "tools/call" {
				id, _ := l["identity"].(string)
				got = append(got, fmt.Sprint(l["exposed"], " ", id))
			}
		}
		want := []string{"remote__remote_echo alice@example.com", "local__echo alice@example.com"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("audit tools/call lines (-want +got):\n%s", diff)
		}
	})

	t.Run("API key with the go-sdk client", func(t *testing.T) {
		cs := authedSession(t, hp, "ci", aliceKey)
		if _, err := cs.ListTools(testCtx(t), nil); err != nil {
			t.Fatalf("list with an API key: %v", err)
		}
	})

	t.Run("key rotation at the issuer", func(t *testing.T) {
		is.addKey("k2", false)
		is.publish("k2") // k1 retired
		tok := is.sign("k2", is.good("carol", aud))
		// The JWKS is fetched again for the unknown kid once the rate bound
		// (100ms here) allows it.
		var status int
		for range 50 {
			resp, _ := authPost(t, hp.endpoint(), "Bearer "+tok, initializeBody)
			if status = resp.StatusCode; status == http.StatusOK {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if status != http.StatusOK {
			t.Fatalf("a token of the new key k2: status %d, want 200", status)
		}
		cs := authedSession(t, hp, "carol", tok)
		if _, err := cs.ListTools(testCtx(t), nil); err != nil {
			t.Fatalf("list with a token of k2: %v", err)
		}
	})

	t.Run("hostile JWKS fails closed", func(t *testing.T) {
		valid := is.sign("k2", is.good("dave", aud))
		for _, mode := range []string{"junk", "oct", "huge"} {
			is.mode.Store(mode)
			is.addKey("k3-"+mode, true)
			tok := is.sign("k3-"+mode, is.good("dave", aud))
			before := is.hits.Load()
			deadline := time.Now().Add(testTimeout)
			for is.hits.Load() == before && time.Now().Before(deadline) {
				// Unknown kid: a fetch, once the rate bound allows it.
				resp, body := authPost(t, hp.endpoint(), "Bearer "+tok, initializeBody)
				if resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("%s JWKS: a token of a key not held: %s %s, want 401", mode, resp.Status, body)
				}
				time.Sleep(50 * time.Millisecond)
			}
			resp, body := authPost(t, hp.endpoint(), "Bearer "+tok, initializeBody)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("%s JWKS: a token of a key not held: %s %s, want 401", mode, resp.Status, body)
			}
			// The keys held keep working.
			if resp, body := authPost(t, hp.endpoint(), "Bearer "+valid, initializeBody); resp.StatusCode != http.StatusOK {
				t.Errorf("%s JWKS: a token of a key held: %s %s, want 200", mode, resp.Status, body)
			}
		}
		is.mode.Store("")
	})

	t.Run("API key rotation by reload", func(t *testing.T) {
		if resp, body := authPost(t, hp.endpoint(), "Bearer "+bobKey, initializeBody); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bob's key before it is added: %s %s, want 401", resp.Status, body)
		}
		if err := os.WriteFile(keys, []byte(keyLine("bob-key", bobKey, "ops")), 0o600); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(testTimeout)
		for {
			resp, _ := authPost(t, hp.endpoint(), "Bearer "+bobKey, initializeBody)
			if resp.StatusCode == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("bob's key was not accepted after the keys file changed\nstderr:\n%s", hp.stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if resp, body := authPost(t, hp.endpoint(), "Bearer "+aliceKey, initializeBody); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("alice's key after it was removed: %s %s, want 401", resp.Status, body)
		}
		// A keys file that no longer parses keeps the keys in force.
		if err := os.WriteFile(keys, []byte("[keys.broken]\nsha256 = \"nothex\"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		deadline = time.Now().Add(testTimeout)
		for !strings.Contains(hp.stderr.String(), "is not a SHA-256 in hex") {
			if time.Now().After(deadline) {
				t.Fatalf("the broken keys file was not reported\nstderr:\n%s", hp.stderr)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if resp, body := authPost(t, hp.endpoint(), "Bearer "+bobKey, initializeBody); resp.StatusCode != http.StatusOK {
			t.Errorf("bob's key after a broken keys file: %s %s, want 200 (the keys in force stay)", resp.Status, body)
		}
	})
}

// TestAuthRemoteNeedsAuth: --allow-remote without [auth] refuses to start,
// naming both ways out; with --insecure-no-auth it serves.
func TestAuthRemoteNeedsAuth(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, fixture("local", nil))
	_, stderr, code := runCLI(t, "serve", "--config", cfg, "--http", "127.0.0.1:0", "--allow-remote")
	if code == 0 || !strings.Contains(stderr, "[auth]") || !strings.Contains(stderr, "--insecure-no-auth") {
		t.Errorf("serve --allow-remote without [auth]: exit %d, stderr:\n%s\nwant a failure naming [auth] and --insecure-no-auth", code, stderr)
	}
	// With [auth] on a non-loopback address, the resource URL must be given.
	withAuth := writeConfig(t, "[auth]\napi_keys_file = \"keys.toml\"\n"+fixture("local", nil))
	if err := os.WriteFile(filepath.Join(filepath.Dir(withAuth), "keys.toml"), []byte(keyLine("k", "0123456789abcdef0123")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, "serve", "--config", withAuth, "--http", "0.0.0.0:0", "--allow-remote")
	if code == 0 || !strings.Contains(stderr, "auth.resource") {
		t.Errorf("serve --allow-remote on 0.0.0.0 without auth.resource: exit %d, stderr:\n%s\nwant a failure naming auth.resource", code, stderr)
	}
	// --insecure-no-auth: it serves.
	p := command(manifoldBin, "serve", "--config", cfg, "--http", freePort(t), "--allow-remote", "--insecure-no-auth")
	out := &syncBuffer{}
	p.Stderr = out
	p.WaitDelay = 5 * time.Second
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.Wait() }()
	deadline := time.After(readyBound)
	for !strings.Contains(out.String(), "serving MCP on") {
		select {
		case err := <-exited:
			t.Fatalf("serve --allow-remote --insecure-no-auth exited (%v):\n%s", err, out)
		case <-deadline:
			_ = p.Process.Kill()
			<-exited
			t.Fatalf("serve --allow-remote --insecure-no-auth did not listen within %s:\n%s", readyBound, out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	_ = p.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Errorf("after SIGTERM: %v\n%s", err, out)
	}
}
