package e2e

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/testdata/oauthfixture"
)

// End-to-end tests of the rest of Manifold as an OAuth client (issue 15,
// item 3): revocation at logout (RFC 7009), step-up authorization, token
// exchange (RFC 8693). The fixture and the helpers are oauth_test.go's.

// refreshWith posts a refresh request with token as client to f's token
// endpoint and returns the status.
func refreshWith(t *testing.T, f *oauthfixture.Fixture, token, client string) int {
	t.Helper()
	resp, err := http.PostForm(f.Issuer+"/token", url.Values{"grant_type": {"refresh_token"}, "refresh_token": {token}, "client_id": {client}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestOAuthLogoutRevokes: `manifold logout` revokes the refresh and the
// access token at the revocation endpoint of the authorization server's
// metadata, then forgets the credential; the old refresh token no longer
// refreshes. A revocation endpoint that fails, or none in the metadata,
// still forgets the credential and says that the grant stays.
func TestOAuthLogoutRevokes(t *testing.T) {
	t.Parallel()
	f, err := oauthfixture.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	cfg := oauthConfig(t, f, "", "")
	dir := filepath.Dir(cfg)
	var outputs []string
	tokenFiles := func() []string {
		files, _ := filepath.Glob(filepath.Join(dir, "tokens", "notes", "*.tok"))
		return files
	}

	t.Run("revoked, then forgotten", func(t *testing.T) {
		outputs = append(outputs, login(t, cfg, "", "svc"))
		rt, at := f.RefreshTokens("svc"), f.Issued("svc")
		if len(rt) != 1 || len(at) != 1 {
			t.Fatalf("issued to svc: %d refresh and %d access tokens, want 1 and 1", len(rt), len(at))
		}
		client := f.TokenRequests()[0].Get("client_id")
		out, errOut, code := runCLI(t, "logout", "notes", "--config", cfg)
		outputs = append(outputs, out, errOut)
		if code != 0 || !strings.Contains(out, "Forgot the credential") || !strings.Contains(out, "revoked it at the authorization server") {
			t.Errorf("logout: exit %d, %q %q; want it to say it revoked and forgot the credential", code, out, errOut)
		}
		revs := f.Revocations()
		if len(revs) != 2 {
			t.Fatalf("revocation requests: %d, want 2 (refresh and access token)", len(revs))
		}
		for i, want := range []struct{ token, hint string }{{rt[0], "refresh_token"}, {at[0], "access_token"}} {
			if revs[i].Get("token") != want.token || revs[i].Get("token_type_hint") != want.hint || revs[i].Get("client_id") != client {
				t.Errorf("revocation %d: hint %q, client %q, the %s itself: %v; want hint %s and client %q",
					i, revs[i].Get("token_type_hint"), revs[i].Get("client_id"), want.hint, revs[i].Get("token") == want.token, want.hint, client)
			}
		}
		if st := refreshWith(t, f, rt[0], client); st == http.StatusOK {
			t.Errorf("the revoked refresh token still refreshes (status %d)", st)
		}
		if files := tokenFiles(); len(files) != 0 {
			t.Errorf("token files after logout: %q", files)
		}
	})

	t.Run("a failing revocation endpoint", func(t *testing.T) {
		outputs = append(outputs, login(t, cfg, "key:alice", "alice"))
		f.SetRevocation("fail")
		before := len(f.Revocations())
		out, errOut, code := runCLI(t, "logout", "notes", "--as", "key:alice", "--config", cfg)
		outputs = append(outputs, out, errOut)
		if code != 0 || !strings.Contains(out, "Forgot the credential") || !strings.Contains(out, "did not revoke it") || !strings.Contains(out, "503") {
			t.Errorf("logout with revocation down: exit %d, %q %q; want it to forget the credential and say the server did not revoke it (503)", code, out, errOut)
		}
		if n := len(f.Revocations()) - before; n == 0 {
			t.Errorf("no revocation was tried")
		}
		if files := tokenFiles(); len(files) != 0 {
			t.Errorf("token files after logout: %q", files)
		}
		f.SetRevocation("")
	})

	t.Run("no revocation endpoint", func(t *testing.T) {
		f.SetRevocation("absent")
		outputs = append(outputs, login(t, cfg, "key:bob", "bob"))
		f.SetRevocation("")
		before := len(f.Revocations())
		out, errOut, code := runCLI(t, "logout", "notes", "--as", "key:bob", "--config", cfg)
		outputs = append(outputs, out, errOut)
		if code != 0 || !strings.Contains(out, "Forgot the credential") || !strings.Contains(out, "offers no revocation endpoint") {
			t.Errorf("logout without a revocation endpoint: exit %d, %q %q; want it to forget the credential and say there is no endpoint", code, out, errOut)
		}
		if n := len(f.Revocations()) - before; n != 0 {
			t.Errorf("%d revocation requests, want none", n)
		}
		if files := tokenFiles(); len(files) != 0 {
			t.Errorf("token files after logout: %q", files)
		}
	})

	audit, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	noSecrets(t, f, "login and logout output, audit", append(outputs, string(audit))...)
}

// lastCall is the last call of tool that f served; ok is false if none.
func lastCall(f *oauthfixture.Fixture, tool string) (oauthfixture.Call, bool) {
	calls := f.Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		if calls[i].Tool == tool {
			return calls[i], true
		}
	}
	return oauthfixture.Call{}, false
}

// TestOAuthStepUp: a server that answers a call 403 insufficient_scope
// with a scope the credential lacks: while serving, the call's result says
// what to run and nothing runs; that login asks for the scopes granted
// before and the one demanded, and the call then works without a restart.
// `manifold call` runs the step-up itself: a browser link on stderr, then
// the call is retried with the new credential.
func TestOAuthStepUp(t *testing.T) {
	t.Parallel()
	f, err := oauthfixture.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	cfg := oauthConfig(t, f, "", "")
	dir := filepath.Dir(cfg)
	var outputs []string

	outputs = append(outputs, login(t, cfg, "", "svc"))
	hp := startHTTP(t, cfg)
	cs := connectHTTP(t, hp)
	if got, isErr := oauthCall(t, cs, "notes__whoami"); got != "user=svc" || isErr {
		t.Fatalf("notes__whoami = %q (isError %v), want user=svc", got, isErr)
	}

	t.Run("while serving: the result says what to run", func(t *testing.T) {
		got, isErr := oauthCall(t, cs, "notes__write_note")
		if !isErr || !strings.Contains(got, "manifold login notes") || !strings.Contains(got, oauthfixture.WriteScope) || !strings.Contains(got, "insufficient_scope") {
			t.Errorf("notes__write_note = %q (isError %v), want an error result naming `manifold login notes` and the scope %s", got, isErr, oauthfixture.WriteScope)
		}
		if c, ok := lastCall(f, "write_note"); ok {
			t.Errorf("write_note ran upstream (as %s) without its scope", c.User)
		}
		if got, isErr := oauthCall(t, cs, "notes__whoami"); got != "user=svc" || isErr {
			t.Errorf("notes__whoami after the refusal = %q (isError %v), want user=svc", got, isErr)
		}
	})

	t.Run("the login it names asks for the union", func(t *testing.T) {
		outputs = append(outputs, login(t, cfg, "", "svc"))
		got, isErr := oauthCall(t, cs, "notes__write_note")
		if got != "written by svc" || isErr {
			t.Fatalf("notes__write_note after the new login = %q (isError %v), want written by svc", got, isErr)
		}
		c, _ := lastCall(f, "write_note")
		if !slices.Contains(c.Scopes, oauthfixture.Scope) || !slices.Contains(c.Scopes, oauthfixture.WriteScope) {
			t.Errorf("the stepped-up token's scopes: %q, want %s and %s", c.Scopes, oauthfixture.Scope, oauthfixture.WriteScope)
		}
	})

	t.Run("manifold call steps up itself", func(t *testing.T) {
		out, errOut, code := runCLI(t, "logout", "notes", "--config", cfg)
		if code != 0 {
			t.Fatalf("logout: exit %d: %s %s", code, out, errOut)
		}
		outputs = append(outputs, out, errOut, login(t, cfg, "", "svc"))
		before := len(f.Issued("svc"))
		out, errOut, links := runBrowsing(t, "svc", "call", "--config", cfg, "notes__write_note", "{}")
		outputs = append(outputs, out, errOut)
		if links != 1 || !strings.Contains(out, "written by svc") || !strings.Contains(errOut, oauthfixture.WriteScope) {
			t.Errorf("manifold call notes__write_note: %d links, stdout %q, stderr %q; want one link, the scope named and the call's result", links, out, errOut)
		}
		if n := len(f.Issued("svc")) - before; n != 1 {
			t.Errorf("tokens issued during manifold call: %d, want 1 (the step-up)", n)
		}
		c, _ := lastCall(f, "write_note")
		if !slices.Contains(c.Scopes, oauthfixture.Scope) || !slices.Contains(c.Scopes, oauthfixture.WriteScope) {
			t.Errorf("the stepped-up token's scopes: %q, want %s and %s", c.Scopes, oauthfixture.Scope, oauthfixture.WriteScope)
		}
	})

	status, _, _ := runCLI(t, "status", "--url", "http://"+hp.addr)
	audit, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	noSecrets(t, f, "manifold's stderr, status, audit, login and call output", append(outputs, hp.stderr.String(), status, string(audit))...)
}

// TestOAuthTokenExchange: with credentials = "exchange", each caller's own
// validated token (a JWT of the test issuer) is exchanged (RFC 8693) at the
// identity provider for an upstream token bound to its subject, once per
// identity while it lasts; the upstream sees only the exchanged tokens,
// never a caller's own; a caller the provider refuses gets a result that
// says so, and nothing runs.
func TestOAuthTokenExchange(t *testing.T) {
	t.Parallel()
	is := newTestIssuer(t)
	f, err := oauthfixture.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	const clientSecret = "e2e-exchange-client-secret-0123456789"
	cfg := oauthConfig(t, f, `credentials = "exchange"
[servers.notes.oauth]
token_url = `+tomlStr(f.Issuer+"/exchange")+`
client_id = "manifold-x"
client_secret = "`+clientSecret+`"
`, "[auth]\nissuer = "+tomlStr(is.url)+"\n")
	dir := filepath.Dir(cfg)
	login(t, cfg, "", "svc") // the catalog's and the health checks' credential
	hp := startHTTP(t, cfg)
	f.EnableExchange(oauthfixture.ExchangeConfig{JWKSURL: is.url + "/jwks", Issuer: is.url, Audience: hp.endpoint(), ClientID: "manifold-x", ClientSecret: clientSecret})
	jwts := map[string]string{}
	sessions := map[string]*mcp.ClientSession{}
	for _, u := range []string{"alice", "bob", "carol"} {
		jwts[u] = whoToken(is, hp.endpoint(), u, "eng")
		sessions[u] = authedSession(t, hp, u, jwts[u])
	}

	for _, u := range []string{"alice", "bob", "alice", "bob"} {
		if got, isErr := oauthCall(t, sessions[u], "notes__whoami"); got != "user="+u || isErr {
			t.Errorf("%s: notes__whoami = %q (isError %v), want user=%s", u, got, isErr, u)
		}
	}
	byUser := map[string]int{}
	for _, c := range f.Calls() {
		byUser[c.User]++
		if !slices.Contains(f.Exchanged(c.User), c.Token) {
			t.Errorf("a call of %s reached the upstream with a token not exchanged for %s", c.User, c.User)
		}
	}
	if diff := cmp.Diff(map[string]int{"alice": 2, "bob": 2}, byUser); diff != "" {
		t.Errorf("calls per user at the upstream (-want +got):\n%s", diff)
	}
	subjects := map[string]int{}
	for _, form := range f.ExchangeRequests() {
		for u, j := range jwts {
			if form.Get("subject_token") == j {
				subjects[u]++
			}
		}
		if form.Get("resource") != f.URL {
			t.Errorf("exchange request resource = %q, want %q", form.Get("resource"), f.URL)
		}
	}
	if diff := cmp.Diff(map[string]int{"alice": 1, "bob": 1}, subjects); diff != "" {
		t.Errorf("exchanges per caller's token, each kept while it lasts (-want +got):\n%s", diff)
	}

	t.Run("refused by the identity provider", func(t *testing.T) {
		f.RefuseExchange("carol")
		got, isErr := oauthCall(t, sessions["carol"], "notes__whoami")
		if !isErr || !strings.Contains(got, "refused to exchange") || !strings.Contains(got, "invalid_grant") || !strings.Contains(got, "nothing was executed") {
			t.Errorf("carol: notes__whoami = %q (isError %v), want an error result saying the provider refused the exchange (invalid_grant)", got, isErr)
		}
		if byUser := f.Calls(); slices.ContainsFunc(byUser, func(c oauthfixture.Call) bool { return c.User == "carol" }) {
			t.Errorf("a call of carol reached the upstream")
		}
		if got, isErr := oauthCall(t, sessions["carol"], "local__echo"); isErr || !strings.Contains(got, "hi") {
			t.Errorf("carol: local__echo = %q (isError %v), want it to work", got, isErr)
		}
		if got, isErr := oauthCall(t, sessions["alice"], "notes__whoami"); got != "user=alice" || isErr {
			t.Errorf("alice after carol's refusal: notes__whoami = %q (isError %v), want user=alice", got, isErr)
		}
	})

	for _, h := range f.SeenAuthorization() {
		for u, j := range jwts {
			if strings.Contains(h, j) {
				t.Errorf("the upstream got %s's own downstream token", u)
			}
		}
	}
	status, _, _ := runCLI(t, "status", "--url", "http://"+hp.addr)
	audit, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	secrets := []string{clientSecret}
	for _, u := range []string{"alice", "bob", "carol"} {
		secrets = append(secrets, jwts[u])
		secrets = append(secrets, f.Exchanged(u)...)
	}
	for _, s := range secrets {
		for where, txt := range map[string]string{"stderr": hp.stderr.String(), "status": status, "audit": string(audit)} {
			if strings.Contains(txt, s) {
				t.Errorf("manifold's %s shows a token or secret (%.6s...)", where, s)
			}
		}
	}
	noSecrets(t, f, "manifold's stderr, status or audit", hp.stderr.String(), status, string(audit))
}
