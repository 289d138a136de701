package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/google/go-cmp/cmp"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
)

const resource = "http://127.0.0.1:7777/mcp"

// issuer is a JWKS server with one EC key, k1, whose responses a test can
// replace.
type issuer struct {
	t     *testing.T
	srv   *httptest.Server
	key   *ecdsa.PrivateKey
	hits  atomic.Int64
	mu    sync.Mutex
	serve http.HandlerFunc // if not nil, answers instead; guarded by mu
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{t: t, key: k}
	is.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		is.hits.Add(1)
		is.mu.Lock()
		h := is.serve
		is.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: "k1", Use: "sig"}}})
	}))
	t.Cleanup(is.srv.Close)
	return is
}

func (is *issuer) setServe(h http.HandlerFunc) {
	is.mu.Lock()
	is.serve = h
	is.mu.Unlock()
}

// token signs claims with k1 (ES256); extra claims are merged in.
func (is *issuer) token(kid string, c jwt.Claims, extra map[string]any) string {
	is.t.Helper()
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: is.key, KeyID: kid}}, nil)
	if err != nil {
		is.t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(c).Claims(extra).Serialize()
	if err != nil {
		is.t.Fatal(err)
	}
	return tok
}

func (is *issuer) claims(now time.Time) jwt.Claims {
	return jwt.Claims{Issuer: "https://idp.example", Subject: "alice", Audience: jwt.Audience{resource},
		Expiry: jwt.NewNumericDate(now.Add(time.Hour)), IssuedAt: jwt.NewNumericDate(now)}
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newAuth(t *testing.T, is *issuer, clk *clock, mod func(*Options)) *Authenticator {
	t.Helper()
	o := Options{Resource: resource, Issuer: "https://idp.example", JWKSURL: is.srv.URL, Scopes: []string{"mcp"}, Now: clk.now,
		HTTPClient: &http.Client{Timeout: 2 * time.Second}}
	if mod != nil {
		mod(&o)
	}
	a, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// serve runs one request with authz through a's middleware and returns the
// status, the challenge and the identity the handler saw.
func serve(a *Authenticator, authz string) (int, string, *Identity) {
	var seen *Identity
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := FromContext(r.Context())
		ti := sdkauth.TokenInfoFromContext(r.Context())
		if ok && ti != nil && ti.UserID == id.UserID() {
			seen = &id
		}
	}))
	req := httptest.NewRequest(http.MethodPost, resource, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("WWW-Authenticate"), seen
}

func TestValidTokenIdentity(t *testing.T) {
	is := newIssuer(t)
	clk := &clock{t: time.Now()}
	a := newAuth(t, is, clk, nil)
	tok := is.token("k1", is.claims(clk.now()), map[string]any{"scope": "mcp read", "groups": []string{"eng", "ops"}, "roles": "admin"})
	code, ch, id := serve(a, "Bearer "+tok)
	if code != http.StatusOK || id == nil {
		t.Fatalf("status %d, challenge %q, identity %v", code, ch, id)
	}
	want := Identity{Subject: "alice", Groups: []string{"eng", "ops", "admin"}, Scopes: []string{"mcp", "read"}, Method: MethodJWT, Issuer: "https://idp.example"}
	if diff := cmp.Diff(want, *id); diff != "" {
		t.Errorf("identity (-want +got):\n%s", diff)
	}
}

// TestLeeway: a token expired within the leeway passes (also the SDK's own
// expiry check behind the middleware), one past it does not.
func TestLeeway(t *testing.T) {
	is := newIssuer(t)
	clk := &clock{t: time.Now()}
	a := newAuth(t, is, clk, func(o *Options) { o.Leeway = 30 * time.Second; o.Now = nil })
	c := is.claims(clk.now())
	c.Expiry = jwt.NewNumericDate(time.Now().Add(-10 * time.Second))
	if code, ch, _ := serve(a, "Bearer "+is.token("k1", c, map[string]any{"scope": "mcp"})); code != http.StatusOK {
		t.Errorf("expired 10s ago with 30s leeway: status %d %q, want 200", code, ch)
	}
	c.Expiry = jwt.NewNumericDate(time.Now().Add(-time.Minute))
	if code, _, _ := serve(a, "Bearer "+is.token("k1", c, map[string]any{"scope": "mcp"})); code != http.StatusUnauthorized {
		t.Errorf("expired a minute ago with 30s leeway: status %d, want 401", code)
	}
}

// TestUnknownKidRateBound: tokens with made-up kids make at most one JWKS
// fetch per JWKSMinRefresh, however many arrive.
func TestUnknownKidRateBound(t *testing.T) {
	is := newIssuer(t)
	clk := &clock{t: time.Now()}
	a := newAuth(t, is, clk, func(o *Options) { o.JWKSMinRefresh = 10 * time.Second })
	good := "Bearer " + is.token("k1", is.claims(clk.now()), map[string]any{"scope": "mcp"})
	if code, _, _ := serve(a, good); code != http.StatusOK {
		t.Fatalf("valid token: %d", code)
	}
	for i := range 200 {
		if code, _, _ := serve(a, "Bearer "+is.token(fmt.Sprintf("made-up-%d", i), is.claims(clk.now()), map[string]any{"scope": "mcp"})); code != http.StatusUnauthorized {
			t.Fatalf("token with an unknown kid: %d, want 401", code)
		}
	}
	if got := is.hits.Load(); got != 1 {
		t.Errorf("JWKS fetched %d times for 200 unknown kids within the min refresh, want 1 (the first)", got)
	}
	clk.add(11 * time.Second)
	for i := range 50 {
		serve(a, "Bearer "+is.token(fmt.Sprintf("again-%d", i), is.claims(clk.now()), map[string]any{"scope": "mcp"}))
	}
	if got := is.hits.Load(); got != 2 {
		t.Errorf("JWKS fetched %d times after the min refresh passed, want 2", got)
	}
	if code, _, _ := serve(a, good); code != http.StatusOK {
		t.Errorf("valid token after the flood: %d", code)
	}
}

// TestHostileJWKS: a JWKS that is slow, huge, junk, an error, or holds only
// keys that must not be used leaves every token refused (fail closed), and
// a refresh that fails keeps the keys already held.
func TestHostileJWKS(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve http.HandlerFunc
	}{
		{"slow", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"keys":[`))
			w.(http.Flusher).Flush()
			<-r.Context().Done() // never finishes
		}},
		{"huge", nil}, // the good keys, after 2 MiB of blanks (set below)
		{"junk", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>not json")) }},
		{"500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) }},
		{"symmetric and weak keys", func(w http.ResponseWriter, r *http.Request) {
			small, _ := rsa.GenerateKey(rand.Reader, 1024)
			set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: []byte("secret"), KeyID: "k1"}, {Key: &small.PublicKey, KeyID: "k1"}}}
			_ = json.NewEncoder(w).Encode(set)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := newIssuer(t)
			if tc.serve == nil {
				good, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: "k1", Use: "sig"}}})
				tc.serve = func(w http.ResponseWriter, r *http.Request) {
					_, _ = w.Write(append([]byte(strings.Repeat(" ", 2<<20)), good...))
				}
			}
			is.setServe(tc.serve)
			clk := &clock{t: time.Now()}
			a := newAuth(t, is, clk, func(o *Options) { o.HTTPClient = &http.Client{Timeout: 300 * time.Millisecond} })
			tok := "Bearer " + is.token("k1", is.claims(clk.now()), map[string]any{"scope": "mcp"})
			if code, ch, _ := serve(a, tok); code != http.StatusUnauthorized || !strings.Contains(ch, `error="invalid_token"`) {
				t.Errorf("with a %s JWKS: status %d %q, want 401 invalid_token", tc.name, code, ch)
			}
			// Once the keys are held, a failing refresh keeps them.
			is.setServe(nil)
			clk.add(time.Minute)
			if code, _, _ := serve(a, tok); code != http.StatusOK {
				t.Fatalf("good JWKS: %d", code)
			}
			is.setServe(tc.serve)
			clk.add(2 * time.Hour) // the set is stale: refetched, and the fetch fails
			tok = "Bearer " + is.token("k1", is.claims(clk.now()), map[string]any{"scope": "mcp"})
			if code, _, _ := serve(a, tok); code != http.StatusOK {
				t.Errorf("after a failed refresh (%s): %d, want 200 with the keys held", tc.name, code)
			}
		})
	}
}

// TestAlgorithmConfusion: none, HMAC with the public key as the secret, and
// a token whose alg does not fit its key are refused.
func TestAlgorithmConfusion(t *testing.T) {
	is := newIssuer(t)
	clk := &clock{t: time.Now()}
	a := newAuth(t, is, clk, nil)
	pub, _ := json.Marshal(jose.JSONWebKey{Key: &is.key.PublicKey})
	hs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pub}, (&jose.SignerOptions{}).WithHeader("kid", "k1"))
	hsTok, _ := jwt.Signed(hs).Claims(is.claims(clk.now())).Claims(map[string]any{"scope": "mcp"}).Serialize()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rs, _ := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: rsaKey, KeyID: "k1"}}, nil)
	rsTok, _ := jwt.Signed(rs).Claims(is.claims(clk.now())).Claims(map[string]any{"scope": "mcp"}).Serialize()
	parts := strings.Split(is.token("k1", is.claims(clk.now()), map[string]any{"scope": "mcp"}), ".")
	noneTok := "eyJhbGciOiJub25lIiwia2lkIjoiazEifQ." + parts[1] + "."
	for name, tok := range map[string]string{"HS256 with the public key": hsTok, "RS256 for an EC kid": rsTok, "alg none": noneTok} {
		if code, ch, _ := serve(a, "Bearer "+tok); code != http.StatusUnauthorized {
			t.Errorf("%s: status %d %q, want 401", name, code, ch)
		}
	}
	if _, err := New(Options{Resource: resource, Issuer: "https://idp.example", Algorithms: []string{"HS256"}}); err == nil {
		t.Error("New accepted HS256")
	}
}

// TestAPIKeys: a key is matched by its hash, a wrong one refused, and
// SetKeys drops a key at once.
func TestAPIKeys(t *testing.T) {
	a, err := New(Options{Resource: resource, Keys: []Key{{Name: "ci", Hash: HashKey("key-one-0123456789"), Groups: []string{"ci"}}}})
	if err != nil {
		t.Fatal(err)
	}
	code, _, id := serve(a, "Bearer key-one-0123456789")
	if code != http.StatusOK || id == nil || id.Subject != "ci" || id.Method != MethodAPIKey {
		t.Fatalf("valid key: %d %+v", code, id)
	}
	if code, ch, _ := serve(a, "Bearer key-one-0123456780"); code != http.StatusUnauthorized || !strings.Contains(ch, "invalid_token") {
		t.Errorf("wrong key: %d %q", code, ch)
	}
	a.SetKeys([]Key{{Name: "ci2", Hash: HashKey("key-two-0123456789")}})
	if code, _, _ := serve(a, "Bearer key-one-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("rotated-out key: %d, want 401", code)
	}
	if code, _, _ := serve(a, "Bearer key-two-0123456789"); code != http.StatusOK {
		t.Errorf("new key: %d, want 200", code)
	}
}

func TestMetadataURL(t *testing.T) {
	a, err := New(Options{Resource: "https://m.example.com/team/mcp", Issuer: "https://idp.example"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := a.ResourceMetadataURL(), "https://m.example.com/.well-known/oauth-protected-resource/team/mcp"; got != want {
		t.Errorf("metadata URL %q, want %q", got, want)
	}
	var paths []string
	for p := range a.MetadataHandlers() {
		paths = append(paths, p)
	}
	if len(paths) != 2 {
		t.Errorf("metadata routes %q, want the well-known path and its /team/mcp form", paths)
	}
}
