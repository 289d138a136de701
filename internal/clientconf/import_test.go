package clientconf

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/manifold-mcp/manifold/internal/config"
	"github.com/manifold-mcp/manifold/internal/tomldepth"
)

// TestSecretsNeverCopied imports inline secrets of every kind and checks
// that none reaches proxy.toml or a note, and that a note names the
// variable that stands for it.
func TestSecretsNeverCopied(t *testing.T) {
	const secret = "s3cr3t-value-1234567890"
	tests := []struct {
		name, client, file string
		wantVar            string
	}{
		{"env by key", "claude-desktop", `{"mcpServers":{"gh":{"command":"npx","env":{"GITHUB_TOKEN":"` + secret + `"}}}}`, "GITHUB_TOKEN"},
		{"env by shape", "cursor", `{"mcpServers":{"gh":{"command":"npx","env":{"FOO":"ghp_abcdefghijklmnopqrstuvwxyz0123"}}}}`, "FOO"},
		{"bearer header", "claude-code", `{"mcpServers":{"api":{"type":"http","url":"https://x.example/mcp","headers":{"Authorization":"Bearer ` + secret + `"}}}}`, "API_TOKEN"},
		{"api key header", "vscode", `{"servers":{"api":{"type":"http","url":"https://x.example/mcp","headers":{"X-Api-Key":"` + secret + `"}}}}`, "API_X_API_KEY"},
		{"url userinfo", "gemini", `{"mcpServers":{"db":{"httpUrl":"https://me:` + secret + `@x.example/mcp"}}}`, "DB_URL"},
		{"url query", "windsurf", `{"mcpServers":{"db":{"serverUrl":"https://x.example/mcp?key=` + secret + `"}}}`, "DB_URL"},
		{"flag with =", "zed", `{"context_servers":{"t":{"command":"srv","args":["--api-key=` + secret + `"]}}}`, "T_API_KEY"},
		{"flag then value", "claude-desktop", `{"mcpServers":{"t":{"command":"srv","args":["--token","` + secret + `"]}}}`, "T_TOKEN"},
		{"codex env", "codex", "[mcp_servers.t]\ncommand = \"srv\"\nenv = { OPENAI_API_KEY = \"" + secret + "\" }\n", "OPENAI_API_KEY"},
		{"codex header", "codex", "[mcp_servers.t]\nurl = \"https://x.example/mcp\"\nhttp_headers = { Authorization = \"Bearer " + secret + "\" }\n", "T_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := ParseClient(tt.client)
			if err != nil {
				t.Fatal(err)
			}
			im := NewImporter(testEnv)
			if err := im.Add(Location{Client: c, Scope: ScopeUser, Path: "/home/me/f"}, []byte(tt.file)); err != nil {
				t.Fatal(err)
			}
			m, err := Merge(nil, im.Entries())
			if err != nil {
				t.Fatal(err)
			}
			out := string(m.Text) + strings.Join(im.Notes, "\n")
			for _, e := range m.Added {
				out += strings.Join(e.Notes, "\n")
			}
			for _, s := range []string{secret, "ghp_abcdefghijklmnopqrstuvwxyz0123"} {
				if strings.Contains(out, s) {
					t.Errorf("the secret is in the output:\n%s", out)
				}
			}
			if !strings.Contains(string(m.Text), "${"+tt.wantVar+"}") || !strings.Contains(string(m.Text), "set "+tt.wantVar+" where manifold runs") {
				t.Errorf("proxy.toml does not reference and name ${%s}:\n%s", tt.wantVar, m.Text)
			}
		})
	}
}

// TestSecretVarsDistinct gives two different secrets under one key two
// variables, and the same secret in two servers one.
func TestSecretVarsDistinct(t *testing.T) {
	im := NewImporter(testEnv)
	file := `{"mcpServers":{
		"a":{"command":"a","env":{"TOKEN":"value-one-123456"}},
		"b":{"command":"b","env":{"TOKEN":"value-two-123456"}},
		"c":{"command":"c","env":{"TOKEN":"value-one-123456"}}}}`
	if err := im.Add(Location{Client: ClaudeDesktop, Scope: ScopeUser, Path: "/f"}, []byte(file)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range im.Entries() {
		got = append(got, e.Name+"="+e.Env["TOKEN"])
	}
	want := []string{"a=${TOKEN}", "b=${B_TOKEN}", "c=${TOKEN}"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("variables (-want +got):\n%s", diff)
	}
}

// TestInterpolation translates each client's variable syntax into
// proxy.toml's.
func TestInterpolation(t *testing.T) {
	tests := []struct {
		client Client
		in     string
		want   string
		unres  bool
	}{
		{ClaudeDesktop, "a$b ${HOME} $$", "a$$b $${HOME} $$$$", false},
		{Zed, "$X", "$$X", false},
		{ClaudeCode, "${A} ${B:-d} $C ${1x}", "${A} ${B:-d} $$C $${1x}", true},
		{Cursor, "${env:TOK} ${userHome}/x ${pathSeparator}", "${TOK} /home/me/x /", false},
		{VSCode, "${workspaceFolder}/a", "/home/me/project/a", false},
		{Windsurf, "${file:/k}", "$${file:/k}", true},
		{Gemini, "$A-${B}_$ %C%", "${A}-${B}_$$ %C%", false},
	}
	for _, tt := range tests {
		ic := interpCtx{style: clientStyle(tt.client), home: "/home/me", workspace: "/home/me/project"}
		got := ic.translate(tt.in)
		if got.out != tt.want || (len(got.unresolved) > 0) != tt.unres {
			t.Errorf("%s: translate(%q) = %q, unresolved %q; want %q (unresolved: %v)", tt.client, tt.in, got.out, got.unresolved, tt.want, tt.unres)
		}
		// Whatever the input, the output is a valid proxy.toml value.
		cfg := "[servers.s]\ncommand = " + str(got.out) + "\n"
		if _, err := config.ParseEnv("p.toml", []byte(cfg), anyVar); err != nil {
			t.Errorf("%s: %q does not load: %v", tt.client, got.out, err)
		}
	}
}

// TestDuplicateKeepsRestrictions merges one server found in two clients:
// each client's deny list stays, and only the tools both allow are.
func TestDuplicateKeepsRestrictions(t *testing.T) {
	im := NewImporter(testEnv)
	claude := `{"mcpServers":{"gh":{"command":"npx","args":["gh"],"env":{}}}}`
	gemini := `{"mcpServers":{"github":{"command":"npx","args":["gh"],"includeTools":["a","b"],"excludeTools":["x"]}}}`
	codex := "[mcp_servers.g]\ncommand = \"npx\"\nargs = [\"gh\"]\nenabled_tools = [\"b\", \"c\"]\ndisabled_tools = [\"y\"]\n"
	for _, f := range []struct {
		c    Client
		data string
	}{{ClaudeCode, claude}, {Gemini, gemini}, {Codex, codex}} {
		if err := im.Add(Location{Client: f.c, Scope: ScopeUser, Path: "/f"}, []byte(f.data)); err != nil {
			t.Fatal(err)
		}
	}
	es := im.Entries()
	if len(es) != 1 {
		t.Fatalf("%d entries, want the three merged into one", len(es))
	}
	if diff := cmp.Diff([]string{"b"}, es[0].Allow); diff != "" {
		t.Errorf("allow (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"x", "y"}, es[0].Deny); diff != "" {
		t.Errorf("deny (-want +got):\n%s", diff)
	}
}

// TestHostileSizes: files nested deeper than the bounds, or larger than
// MaxFileBytes, are refused with an error, quickly, by every reader.
func TestHostileSizes(t *testing.T) {
	deepJSON := `{"mcpServers":` + strings.Repeat("[", 100000)
	deepTOML := "a = " + strings.Repeat("{b=", 20000) // the TOML decoder needs about a minute for this
	tests := []struct {
		name   string
		client Client
		data   string
		want   string
	}{
		{"deep JSON", ClaudeCode, deepJSON, "nested more than"},
		{"deep TOML", Codex, deepTOML, "nested more than"},
		{"deep TOML in arrays", Codex, "a = " + strings.Repeat("[", 100000), "nested more than"},
		{"huge", Cursor, `{"x":"` + strings.Repeat("a", MaxFileBytes) + `"}`, "more than a client file holds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := NewImporter(testEnv).Add(Location{Client: tt.client, Scope: ScopeUser, Path: "/f"}, []byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("import: %v, want an error saying %q", err, tt.want)
			}
			if tt.name == "huge" {
				return
			}
			if _, err := Connect(tt.client, []byte(tt.data), connectServer, nil); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("connect: %v, want an error saying %q", err, tt.want)
			}
		})
	}
	// Strings and comments do not count.
	ok := "# [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\nx = \"" + strings.Repeat("{", 100) + "\"\ny = '''\n" + strings.Repeat("[", 100) + "'''\n"
	if err := tomldepth.Check(ok); err != nil {
		t.Errorf("brackets in comments and strings counted: %v", err)
	}
}

// TestConnectTimeouts: the client's own per-call timeout is set above
// Manifold's longest call, where the client has one.
func TestConnectTimeouts(t *testing.T) {
	s := connectServer
	s.CallTimeout = 15 * time.Minute
	for _, tt := range []struct {
		c    Client
		want string
	}{
		{ClaudeCode, `"timeout": 930000`},
		{Gemini, `"timeout": 930000`},
		{Codex, "tool_timeout_sec = 930\n"},
	} {
		out, err := Connect(tt.c, nil, s, nil)
		if err != nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("%s: %v, want %s in:\n%s", tt.c, err, tt.want, out)
		}
	}
	// Under Gemini CLI's default of 10 minutes, nothing is written.
	out, _ := Connect(Gemini, nil, connectServer, nil)
	if strings.Contains(string(out), "timeout") {
		t.Errorf("gemini with Manifold's default call timeout:\n%s", out)
	}
}
