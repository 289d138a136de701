package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOAuthKeys(t *testing.T) {
	env := func(string) (string, bool) { return "", false }
	cfg, err := ParseEnv("/cfg/proxy.toml", []byte(`
[tokens]
dir = "state/tokens"
key = "0123456789abcdef0123456789abcdef-key"

[servers.notes]
url = "https://notes.example/mcp"
auth = "oauth"
credentials = "identity"
[servers.notes.oauth]
client_id = "manifold"
client_secret = "client-secret-0123456789"
scopes = ["notes.read"]
redirect_port = 8976
`), env)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Tokens{Dir: "/cfg/state/tokens", Key: "0123456789abcdef0123456789abcdef-key"}, cfg.Tokens); diff != "" {
		t.Errorf("Tokens (-want +got):\n%s", diff)
	}
	s := cfg.Servers[0]
	want := &OAuthClient{ClientID: "manifold", ClientSecret: "client-secret-0123456789", Scopes: []string{"notes.read"}, RedirectPort: 8976}
	if diff := cmp.Diff(want, s.OAuth); diff != "" || !s.PerIdentity {
		t.Errorf("OAuth (-want +got):\n%s\nPerIdentity %v", diff, s.PerIdentity)
	}
	for _, secret := range []string{"0123456789abcdef0123456789abcdef-key", "client-secret-0123456789"} {
		found := false
		for _, v := range cfg.Secrets {
			found = found || v == secret
		}
		if !found {
			t.Errorf("Secrets lack %q", secret)
		}
	}

	for _, tc := range []struct{ name, body, want string }{
		{"bad auth", "[servers.a]\nurl = \"https://a.example/mcp\"\nauth = \"basic\"\n", `"basic" is not an auth mode`},
		{"identity without oauth", "[servers.a]\nurl = \"https://a.example/mcp\"\ncredentials = \"identity\"\n", `credentials = "identity" needs auth = "oauth"`},
		{"oauth on a command", "[servers.a]\ncommand = \"x\"\nauth = \"oauth\"\n", `only for a remote server`},
		{"oauth over sse", "[servers.a]\nurl = \"https://a.example/mcp\"\ntransport = \"sse\"\nauth = \"oauth\"\n", `needs the streamable transport`},
		{"short key", "[tokens]\nkey = \"short\"\n", `must be at least 32`},
		{"unknown oauth key", "[servers.a]\nurl = \"https://a.example/mcp\"\nauth = \"oauth\"\n[servers.a.oauth]\nclient = \"x\"\n", `client`},
		{"identities without isolation", "[servers.a]\ncommand = \"x\"\n[servers.a.identities.\"user:al\"]\nenv = { A = \"b\" }\n", `add isolation = "identity"`},
		{"identity not user:", "[servers.a]\ncommand = \"x\"\nisolation = \"identity\"\n[servers.a.identities.alice]\nenv = { A = \"b\" }\n", `"alice" is not an identity`},
		{"isolation identity on a url", "[servers.a]\nurl = \"https://a.example/mcp\"\nisolation = \"identity\"\n", `credentials = "identity"`},
		{"secret without id", "[servers.a]\nurl = \"https://a.example/mcp\"\nauth = \"oauth\"\n[servers.a.oauth]\nclient_secret = \"0123456789abcdef\"\n", `client_secret needs client_id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEnv("/cfg/proxy.toml", []byte(tc.body), env)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want it to contain %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789abcdef") {
				t.Errorf("error shows the secret: %v", err)
			}
		})
	}
}

func TestIsolationIdentityKeys(t *testing.T) {
	cfg, err := ParseEnv("/cfg/proxy.toml", []byte(`
[servers.a]
command = "x"
isolation = "identity"
[servers.a.identities."user:alice"]
env = { TOKEN = "alice-secret-token-1" }
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	if diff := cmp.Diff(map[string]map[string]string{"user:alice": {"TOKEN": "alice-secret-token-1"}}, s.Identities); diff != "" || !s.PerIdentity {
		t.Errorf("Identities (-want +got):\n%s\nPerIdentity %v", diff, s.PerIdentity)
	}
	found := false
	for _, v := range cfg.Secrets {
		found = found || v == "alice-secret-token-1"
	}
	if !found {
		t.Error("an identity's env value is not among the secrets")
	}
}
