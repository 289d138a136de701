package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/testdata/oauthfixture"
)

// tokenKey is the [tokens] key of these tests (a file read with ${file:}).
const tokenKey = "e2e-token-store-key-0123456789abcdef0123"

// oauthConfig writes a config whose server "notes" is f's protected MCP
// server with auth = "oauth", extra appended to its table, beside the local
// fixture server; rest goes at the end.
func oauthConfig(t *testing.T, f *oauthfixture.Fixture, extra, rest string) string {
	t.Helper()
	cfg := writeConfig(t, `
[audit]
file = "audit.jsonl"

[tokens]
dir = "tokens"
key = "${file:token.key}"
`+fixture("local", nil)+`
[servers.notes]
url = `+tomlStr(f.URL)+`
auth = "oauth"
`+extra+"\n"+rest)
	writeFile(t, filepath.Join(filepath.Dir(cfg), "token.key"), tokenKey)
	return cfg
}

// login runs `manifold login notes` (with --as as, if not empty) and plays
// the browser as user at the authorization server: it follows the link
// that manifold prints and agrees. It returns manifold's output.
func login(t *testing.T, cfg, as, user string) string {
	t.Helper()
	args := []string{"login", "notes", "--config", cfg}
	if as != "" {
		args = append(args, "--as", as)
	}
	out, errOut, links := runBrowsing(t, user, args...)
	if links == 0 {
		t.Fatalf("manifold %s printed no link:\n%s", strings.Join(args, " "), errOut)
	}
	return out + errOut
}

// runBrowsing runs manifold with args and plays the browser as user for
// every authorization link it prints on stderr (a login, or the step-up of
// manifold call). It fails the test if manifold fails, and returns stdout,
// stderr and how many links it followed.
func runBrowsing(t *testing.T, user string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), testTimeout)
	defer cancel()
	cmd := commandContext(ctx, manifoldBin, args...)
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	errR, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	sc := bufio.NewScanner(errR)
	links := 0
	for sc.Scan() {
		line := sc.Text()
		errb.WriteString(line + "\n")
		if link, ok := strings.CutPrefix(strings.TrimSpace(line), "http"); ok {
			links++
			if err := oauthfixture.Consent(ctx, "http"+link, user); err != nil {
				t.Errorf("browser step: %v", err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("manifold %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String(), links
}

func oauthCall(t *testing.T, cs *mcp.ClientSession, name string) (string, bool) {
	t.Helper()
	var args any
	if strings.HasSuffix(name, "echo") {
		args = map[string]any{"message": "hi"}
	}
	res, err := cs.CallTool(testCtx(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return text(res), res.IsError
}

// secretsOf are every access and refresh token f issued or was sent.
func secretsOf(f *oauthfixture.Fixture) []string {
	out := f.AllIssued()
	for _, form := range f.TokenRequests() {
		for _, k := range []string{"refresh_token", "code", "code_verifier"} {
			if v := form.Get(k); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

func noSecrets(t *testing.T, f *oauthfixture.Fixture, where string, texts ...string) {
	t.Helper()
	for _, s := range secretsOf(f) {
		for _, txt := range texts {
			if strings.Contains(txt, s) {
				t.Errorf("%s shows a token or code (%.6s...)", where, s)
			}
		}
	}
}

// TestOAuthServiceCredential: `manifold login` runs the authorization-code
// flow (dynamic registration, PKCE, resource) through a browser link; calls
// carry the stored token; a token the server stops accepting is refreshed,
// and the refresh carries the resource; a revoked grant becomes a result
// that says how to authorize, while the other servers keep working; a new
// login cures it without a restart; no token shows anywhere.
func TestOAuthServiceCredential(t *testing.T) {
	t.Parallel()
	f, err := oauthfixture.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	cfg := oauthConfig(t, f, "", "")
	dir := filepath.Dir(cfg)

	out := login(t, cfg, "", "svc")
	if !strings.Contains(out, "Logged in to \"notes\"") {
		t.Errorf("login output:\n%s", out)
	}
	issued := f.Issued("svc")
	if len(issued) != 1 {
		t.Fatalf("tokens issued to svc: %d, want 1", len(issued))
	}
	files, _ := filepath.Glob(filepath.Join(dir, "tokens", "notes", "*.tok"))
	if len(files) != 1 {
		t.Fatalf("token files: %q, want one", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file %s: %v, %v; want mode 0600", files[0], fi.Mode(), err)
	}
	raw, _ := os.ReadFile(files[0])
	noSecrets(t, f, "the token file (encrypted at rest)", string(raw))
	authz := f.TokenRequests()[0]
	if authz.Get("grant_type") != "authorization_code" || authz.Get("resource") != f.URL || authz.Get("code_verifier") == "" {
		t.Errorf("code exchange form: grant_type %q, resource %q, code_verifier set %v; want authorization_code, %q, true",
			authz.Get("grant_type"), authz.Get("resource"), authz.Get("code_verifier") != "", f.URL)
	}

	hp := startHTTP(t, cfg)
	cs := connectHTTP(t, hp)

	t.Run("call carries the stored token", func(t *testing.T) {
		if got, isErr := oauthCall(t, cs, "notes__whoami"); got != "user=svc" || isErr {
			t.Fatalf("notes__whoami = %q (isError %v), want user=svc", got, isErr)
		}
		calls := f.Calls()
		if last := calls[len(calls)-1]; last.Token != issued[0] {
			t.Errorf("the server got another token than the one issued at login")
		}
	})

	t.Run("refresh keeps the resource", func(t *testing.T) {
		f.Expire()
		if got, isErr := oauthCall(t, cs, "notes__whoami"); got != "user=svc" || isErr {
			t.Fatalf("after expiry: notes__whoami = %q (isError %v), want user=svc", got, isErr)
		}
		var refreshes int
		for _, form := range f.TokenRequests() {
			if form.Get("grant_type") != "refresh_token" {
				continue
			}
			refreshes++
			if form.Get("resource") != f.URL {
				t.Errorf("refresh request resource = %q, want %q", form.Get("resource"), f.URL)
			}
		}
		if refreshes != 1 {
			t.Errorf("refresh requests: %d, want 1", refreshes)
		}
		now := f.Issued("svc")
		calls := f.Calls()
		if len(now) != 2 || calls[len(calls)-1].Token != now[1] {
			t.Errorf("after the refresh the server did not get the new token (%d issued)", len(now))
		}
	})

	t.Run("revoked grant says how to authorize", func(t *testing.T) {
		f.Revoke("svc")
		got, isErr := oauthCall(t, cs, "notes__whoami")
		if !isErr || !strings.Contains(got, "manifold login notes") || !strings.Contains(got, "not authorized") {
			t.Errorf("after revocation: notes__whoami = %q (isError %v), want an error result naming `manifold login notes`", got, isErr)
		}
		if got, isErr := oauthCall(t, cs, "local__echo"); isErr || !strings.Contains(got, "hi") {
			t.Errorf("local__echo after notes' revocation = %q (isError %v), want it to work", got, isErr)
		}
	})

	t.Run("a new login cures it", func(t *testing.T) {
		login(t, cfg, "", "svc")
		if got, isErr := oauthCall(t, cs, "notes__whoami"); got != "user=svc" || isErr {
			t.Errorf("after a new login: notes__whoami = %q (isError %v), want user=svc", got, isErr)
		}
	})

	status, _, _ := runCLI(t, "status", "--url", "http://"+hp.addr)
	audit, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	noSecrets(t, f, "manifold's stderr, status or audit", hp.stderr.String(), status, string(audit))

	t.Run("logout forgets", func(t *testing.T) {
		out, _, code := runCLI(t, "logout", "notes", "--config", cfg)
		if code != 0 || !strings.Contains(out, "Forgot the credential") {
			t.Errorf("logout: exit %d, %q", code, out)
		}
		if files, _ := filepath.Glob(filepath.Join(dir, "tokens", "notes", "*.tok")); len(files) != 0 {
			t.Errorf("token files after logout: %q", files)
		}
	})
}

// TestOAuthPerIdentity: with credentials = "identity", each authenticated
// caller's calls reach the upstream with that caller's own token only; a
// caller without a login gets the result that says how to authorize, and
// so does a caller whose grant was revoked, while the others keep working;
// the catalog and health use the service credential, never a user's.
func TestOAuthPerIdentity(t *testing.T) {
	t.Parallel()
	f, err := oauthfixture.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	const aliceKey = "e2e-oauth-key-alice-0123456789abcdef"
	const bobKey = "e2e-oauth-key-bob-0123456789abcdef01"
	const carolKey = "e2e-oauth-key-carol-0123456789abcdef"
	cfg := oauthConfig(t, f, `credentials = "identity"`, "[auth]\napi_keys_file = \"keys.toml\"\n")
	dir := filepath.Dir(cfg)
	writeFile(t, filepath.Join(dir, "keys.toml"), keyLine("alice", aliceKey)+keyLine("bob", bobKey)+keyLine("carol", carolKey))

	login(t, cfg, "", "svc")
	login(t, cfg, "key:alice", "alice")
	login(t, cfg, "key:bob", "bob")
	hp := startHTTP(t, cfg)
	alice := authedSession(t, hp, "alice", aliceKey)
	bob := authedSession(t, hp, "bob", bobKey)
	carol := authedSession(t, hp, "carol", carolKey)

	for _, tc := range []struct {
		cs   *mcp.ClientSession
		user string
	}{{alice, "alice"}, {bob, "bob"}, {alice, "alice"}, {bob, "bob"}} {
		if got, isErr := oauthCall(t, tc.cs, "notes__whoami"); got != "user="+tc.user || isErr {
			t.Errorf("%s: notes__whoami = %q (isError %v), want user=%s", tc.user, got, isErr, tc.user)
		}
	}
	tokensOf := map[string]map[string]bool{}
	for _, u := range []string{"svc", "alice", "bob"} {
		tokensOf[u] = map[string]bool{}
		for _, tok := range f.Issued(u) {
			tokensOf[u][tok] = true
		}
	}
	var byUser = map[string]int{}
	for _, c := range f.Calls() {
		byUser[c.User]++
		if !tokensOf[c.User][c.Token] {
			t.Errorf("a call of %s reached the server with a token not issued to %s", c.User, c.User)
		}
	}
	if diff := cmp.Diff(map[string]int{"alice": 2, "bob": 2}, byUser); diff != "" {
		t.Errorf("calls per user at the upstream (-want +got):\n%s", diff)
	}

	t.Run("no login", func(t *testing.T) {
		got, isErr := oauthCall(t, carol, "notes__whoami")
		if !isErr || !strings.Contains(got, "manifold login notes --as key:carol") {
			t.Errorf("carol: notes__whoami = %q (isError %v), want an error result naming `manifold login notes --as key:carol`", got, isErr)
		}
		if got, isErr := oauthCall(t, carol, "local__echo"); isErr || !strings.Contains(got, "hi") {
			t.Errorf("carol: local__echo = %q (isError %v), want it to work", got, isErr)
		}
	})

	t.Run("one revoked, the other works", func(t *testing.T) {
		f.Revoke("alice")
		got, isErr := oauthCall(t, alice, "notes__whoami")
		if !isErr || !strings.Contains(got, "manifold login notes --as key:alice") {
			t.Errorf("alice revoked: notes__whoami = %q (isError %v), want an error result naming `manifold login notes --as key:alice`", got, isErr)
		}
		if got, isErr := oauthCall(t, bob, "notes__whoami"); got != "user=bob" || isErr {
			t.Errorf("bob after alice's revocation: notes__whoami = %q (isError %v), want user=bob", got, isErr)
		}
		login(t, cfg, "key:alice", "alice")
		if got, isErr := oauthCall(t, alice, "notes__whoami"); got != "user=alice" || isErr {
			t.Errorf("alice after a new login: notes__whoami = %q (isError %v), want user=alice", got, isErr)
		}
	})

	status, _, _ := runCLI(t, "status", "--url", "http://"+hp.addr)
	audit, _ := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	noSecrets(t, f, "manifold's stderr, status or audit", hp.stderr.String(), status, string(audit))
}

// TestIsolationIdentity: a stdio server with isolation = "identity" runs a
// process per authenticated caller, started with that caller's environment;
// a caller without an entry is refused with what to add; the shared
// process (the catalog) has none of them.
func TestIsolationIdentity(t *testing.T) {
	t.Parallel()
	const aliceKey = "e2e-iso-key-alice-0123456789abcdef"
	const bobKey = "e2e-iso-key-bob-0123456789abcdef01"
	const carolKey = "e2e-iso-key-carol-0123456789abcdef"
	cfg := writeConfig(t, `
[auth]
api_keys_file = "keys.toml"
`+fixture("per", []string{"-extra", "secrets"}, `isolation = "identity"`, `pin = "off"`)+`
[servers.per.identities."key:alice"]
env = { WHO = "alice" }
[servers.per.identities."key:bob"]
env = { WHO = "bob" }
`)
	writeFile(t, filepath.Join(filepath.Dir(cfg), "keys.toml"), keyLine("alice", aliceKey)+keyLine("bob", bobKey)+keyLine("carol", carolKey))
	hp := startHTTP(t, cfg)
	for _, tc := range []struct {
		key, user, want, not string
	}{
		{aliceKey, "alice", "WHO=alice", "WHO=bob"},
		{bobKey, "bob", "WHO=bob", "WHO=alice"},
	} {
		cs := authedSession(t, hp, tc.user, tc.key)
		for range 2 {
			got, isErr := oauthCall(t, cs, "per__secrets")
			if isErr || !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
				t.Errorf("%s: per__secrets = %q (isError %v), want %s and not %s", tc.user, got, isErr, tc.want, tc.not)
			}
		}
	}
	carol := authedSession(t, hp, "carol", carolKey)
	got, isErr := oauthCall(t, carol, "per__secrets")
	if !isErr || !strings.Contains(got, `[servers.per.identities."key:carol"]`) || strings.Contains(got, "WHO=") {
		t.Errorf("carol: per__secrets = %q (isError %v), want a refusal naming [servers.per.identities.\"key:carol\"]", got, isErr)
	}
}
