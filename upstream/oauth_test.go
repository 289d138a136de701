package upstream

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/internal/tokenstore"
)

// tokenEndpoint is a token endpoint that records the forms posted to it and
// answers refreshes with access tokens "at-1", "at-2", ..., or refuses them
// (invalid_grant) once refuse is set.
type tokenEndpoint struct {
	mu     sync.Mutex
	forms  []url.Values
	refuse bool
}

func (te *tokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(body))
	te.mu.Lock()
	te.forms = append(te.forms, form)
	n, refuse := len(te.forms), te.refuse
	te.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if refuse {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + string(rune('0'+n)), "token_type": "Bearer", "expires_in": 3600, "refresh_token": "rt-" + string(rune('0'+n))})
}

func newTestStore(t *testing.T, te *tokenEndpoint, expiry time.Time) (*tokenstore.Store, string) {
	t.Helper()
	srv := httptest.NewServer(te)
	t.Cleanup(srv.Close)
	store, err := tokenstore.Open(t.TempDir(), []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	cred := &tokenstore.Credential{AccessToken: "at-0", TokenType: "Bearer", RefreshToken: "rt-0", Expiry: expiry,
		Resource: "https://notes.example/mcp", TokenURL: srv.URL + "/token", ClientID: "c1", AuthStyle: 1}
	if err := store.Save("notes", "user:alice", cred); err != nil {
		t.Fatal(err)
	}
	return store, srv.URL
}

// TestOAuthRefresh: a refresh, due or forced by a 401, carries the RFC 8707
// resource of the login, and the new token is saved; a refused refresh is an
// *AuthError that names the login command.
func TestOAuthRefresh(t *testing.T) {
	te := &tokenEndpoint{}
	store, _ := newTestStore(t, te, time.Now().Add(-time.Minute)) // expired
	h, err := newOAuthHandler("notes", OAuth{Store: store, Identity: "user:alice"}, http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := h.TokenSource(t.Context())
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken != "at-1" {
		t.Errorf("token after the due refresh = %q, want at-1", tok.AccessToken)
	}

	// A 401 to the fresh token: a forced refresh.
	req := httptest.NewRequest(http.MethodPost, "https://notes.example/mcp", nil)
	req.Header.Set("Authorization", "Bearer at-1")
	resp := &http.Response{StatusCode: http.StatusUnauthorized, Body: io.NopCloser(strings.NewReader(""))}
	if err := h.Authorize(t.Context(), req, resp); err != nil {
		t.Fatalf("Authorize after a 401: %v", err)
	}
	ts, _ = h.TokenSource(t.Context())
	if tok, err := ts.Token(); err != nil || tok.AccessToken != "at-2" {
		t.Errorf("token after the forced refresh = %v, %v; want at-2", tok, err)
	}

	type sent struct{ Grant, Refresh, Resource string }
	var got []sent
	te.mu.Lock()
	for _, f := range te.forms {
		got = append(got, sent{f.Get("grant_type"), f.Get("refresh_token"), f.Get("resource")})
	}
	te.mu.Unlock()
	want := []sent{
		{"refresh_token", "rt-0", "https://notes.example/mcp"},
		{"refresh_token", "rt-1", "https://notes.example/mcp"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refresh requests (-want +got):\n%s", diff)
	}
	saved, err := store.Load("notes", "user:alice")
	if err != nil || saved.AccessToken != "at-2" || saved.RefreshToken != "rt-2" {
		t.Errorf("saved credential: %+v, %v; want at-2/rt-2", saved, err)
	}

	// Revoked: the refresh is refused, and the error says how to authorize.
	te.mu.Lock()
	te.refuse = true
	te.mu.Unlock()
	req.Header.Set("Authorization", "Bearer at-2")
	resp = &http.Response{StatusCode: http.StatusUnauthorized, Body: io.NopCloser(strings.NewReader(""))}
	err = h.Authorize(t.Context(), req, resp)
	var ae *AuthError
	if !errors.As(err, &ae) || !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "manifold login notes --as user:alice") {
		t.Errorf("Authorize after a refused refresh = %v, want an *AuthError naming `manifold login notes --as user:alice`", err)
	}
	if _, err := h.TokenSource(t.Context()); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("TokenSource once refused = %v, want ErrUnauthorized", err)
	}
}

// TestOAuthNoCredential: a server without a stored credential fails at once
// with the command that authorizes.
func TestOAuthNoCredential(t *testing.T) {
	store, err := tokenstore.Open(t.TempDir(), []byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ identity, want string }{
		{"", "run `manifold login notes` to authorize"},
		{"user:bob", "run `manifold login notes --as user:bob` to authorize"},
		{"user:o'neil x", `run ` + "`manifold login notes --as 'user:o'\\''neil x'`" + ` to authorize`},
	} {
		_, err := newOAuthHandler("notes", OAuth{Store: store, Identity: tc.identity}, http.DefaultTransport)
		if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("identity %q: %v; want ErrUnauthorized containing %q", tc.identity, err, tc.want)
		}
	}
}
