package config

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseAuth(t *testing.T) {
	dir, _ := filepath.Abs(".")
	good := []struct {
		name, doc string
		want      Auth
	}{
		{"absent", "", Auth{}},
		{"oidc", `[auth]
issuer = "https://idp.example.com/realms/team"
resource = "https://manifold.example.com/mcp"
audience = ["https://manifold.example.com/mcp", "manifold"]
jwks_url = "https://idp.example.com/realms/team/certs"
scopes = ["mcp:tools"]
algorithms = ["RS256"]
leeway = "10s"
jwks_min_refresh = "1m"
`, Auth{Issuer: "https://idp.example.com/realms/team", Resource: "https://manifold.example.com/mcp",
			Audiences: []string{"https://manifold.example.com/mcp", "manifold"}, JWKSURL: "https://idp.example.com/realms/team/certs",
			Scopes: []string{"mcp:tools"}, Algorithms: []string{"RS256"}, Leeway: 10 * time.Second, JWKSMinRefresh: time.Minute}},
		{"keys", "[auth]\napi_keys_file = \"keys.toml\"\n", Auth{APIKeysFile: filepath.Join(dir, "keys.toml")}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, cfg.Auth); diff != "" {
				t.Errorf("Auth (-want +got):\n%s", diff)
			}
		})
	}

	bad := []struct {
		name, doc string
		want      []string
	}{
		{"empty", "[auth]\n", []string{
			"proxy.toml:1:2: auth: sets neither issuer nor api_keys_file, so no client could authenticate; set one of them, or remove [auth]"}},
		{"http issuer", "[auth]\nissuer = \"http://idp.example.com\"\n", []string{
			`proxy.toml:2:1: auth.issuer: "http://idp.example.com" is not an https URL; write the issuer exactly as the iss claim of its tokens, like "https://idp.example.com/realms/team" (http only for localhost)`}},
		{"hmac", "[auth]\nissuer = \"https://idp.example.com\"\nalgorithms = [\"HS256\"]\n", []string{
			`proxy.toml:3:1: auth.algorithms: "HS256" is not accepted; use asymmetric algorithms among RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA (none and HS* are never accepted)`}},
		{"scopes without issuer", "[auth]\napi_keys_file = \"k.toml\"\nscopes = [\"mcp\"]\n", []string{
			"proxy.toml:3:1: auth.scopes: applies only to the tokens of an issuer, and auth.issuer is not set; set auth.issuer, or remove auth.scopes"}},
		{"unknown key", "[auth]\nissuer = \"https://idp.example.com\"\nscope = [\"mcp\"]\n", []string{
			`proxy.toml:3:1: auth.scope: unknown key; did you mean "scopes"?`}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if diff := cmp.Diff(tt.want, problems(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadAPIKeys(t *testing.T) {
	sum := sha256.Sum256([]byte("the-key-of-ci-0123456789"))
	envSum := sha256.Sum256([]byte("the-key-of-alice-0123456789"))
	write := func(t *testing.T, body string) string {
		p := filepath.Join(t.TempDir(), "keys.toml")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lookup := env(map[string]string{"ALICE_KEY": "the-key-of-alice-0123456789", "SHORT": "abc"})
	p := write(t, `[keys.ci-bot]
sha256 = "`+hexOf(sum)+`"
groups = ["ci"]

[keys.alice]
env = "ALICE_KEY"
`)
	got, err := LoadAPIKeys(p, lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []APIKey{{Name: "ci-bot", SHA256: sum, Groups: []string{"ci"}}, {Name: "alice", SHA256: envSum}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		name, doc string
		want      []string
	}{
		{"bad hash", "[keys.a]\nsha256 = \"abc\"\n", []string{
			`keys.toml:2:1: keys.a.sha256: is not a SHA-256 in hex (64 characters); write the output of printf %s "$KEY" | sha256sum`}},
		{"both", "[keys.a]\nsha256 = \"" + hexOf(sum) + "\"\nenv = \"ALICE_KEY\"\n", []string{
			`keys.toml:1:7: keys.a: needs exactly one of sha256 (the SHA-256 of the key in hex: printf %s "$KEY" | sha256sum) and env (the name of an environment variable holding the key)`}},
		{"unset env", "[keys.a]\nenv = \"NOPE\"\n", []string{
			"keys.toml:2:1: keys.a.env: environment variable NOPE is not set; set it to the key, or write sha256 instead"}},
		{"short env", "[keys.a]\nenv = \"SHORT\"\n", []string{
			"keys.toml:2:1: keys.a.env: environment variable SHORT holds a key shorter than 16 characters; use a long random key, such as the output of openssl rand -hex 32"}},
		{"same key twice", "[keys.a]\nsha256 = \"" + hexOf(sum) + "\"\n[keys.b]\nsha256 = \"" + hexOf(sum) + "\"\n", []string{
			`keys.toml:3:7: keys.b: is the same key as "a"; give every client a key of its own`}},
		{"unknown key", "[keys.a]\nsha256 = \"" + hexOf(sum) + "\"\ngroup = [\"x\"]\n", []string{
			`keys.toml:3:1: keys.a.group: unknown key; did you mean "groups"?`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := write(t, tt.doc)
			_, err := LoadAPIKeys(p, lookup)
			var got []string
			for _, m := range problems(t, err) {
				rel, _ := filepath.Rel(filepath.Dir(p), m[:len(p)])
				got = append(got, rel+m[len(p):])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func hexOf(b [32]byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 64)
	for i, c := range b {
		out[2*i], out[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(out)
}
