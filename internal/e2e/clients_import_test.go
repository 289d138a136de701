package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests of manifold import and connect with the built binary: a user's
// Claude Code and Codex configurations are imported into a proxy.toml,
// Manifold is connected into both clients, and the entries connect wrote
// are what a client starts.

// homeEnv is the environment of manifold run for a user whose home is
// home: no other config is found.
func homeEnv(home string) []string {
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"MANIFOLD_CONFIG=", "CODEX_HOME=", "CLAUDE_CONFIG_DIR=", "APPDATA=")
}

// runManifold runs manifold with args in dir with env; it fails the test
// unless manifold exits 0.
func runManifold(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(testCtx(t), testTimeout)
	defer cancel()
	cmd := commandContext(ctx, manifoldBin, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.WaitDelay = 5 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("manifold %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestImportConnect imports a Claude Code configuration (user scope, and a
// project's .mcp.json) and a Codex one that point at the fixture and at
// the npm memory server (one server in both, merged), connects Manifold
// into both clients with --replace, and then starts each client's entry as
// the client would: through it, every imported server's tools are listed
// and callable.
func TestImportConnect(t *testing.T) {
	t.Parallel()
	home, work := t.TempDir(), t.TempDir()
	env := homeEnv(home)
	memory, haveMemory := optionalNodeBin("mcp-server-memory")

	servers := map[string][]string{"alpha": {"-name", "alpha"}, "beta": {"-name", "beta"}, "shared": {"-name", "gamma"}}
	claude := fmt.Sprintf(`{
  "numStartups": 4,
  "mcpServers": {
    "alpha": { "type": "stdio", "command": %s, "args": ["-name", "alpha"], "env": {} },
    "shared": { "command": %s, "args": ["-name", "gamma"], "env": { "API_TOKEN": "inline-secret-0123456789" } }%s
  },
  "projects": { %s: { "mcpServers": {} } }
}`, jsonStr(fixtureBin), jsonStr(fixtureBin), map[bool]string{true: `,
    "memory": { "command": ` + jsonStr(memory) + `, "args": [] }`}[haveMemory], jsonStr(work))
	writeFile(t, filepath.Join(home, ".claude.json"), claude)
	writeFile(t, filepath.Join(work, ".mcp.json"), `{ "mcpServers": { "beta": { "command": `+jsonStr(fixtureBin)+`, "args": ["-name", "beta"] } } }`)
	codex := fmt.Sprintf(`# my Codex settings
model = "gpt-5-codex"

[mcp_servers.gamma]   # the same server as Claude Code's "shared"
command = %s
args = ["-name", "gamma"]
startup_timeout_sec = 20
disabled_tools = ["fail"]
`, jsonStr(fixtureBin))
	writeFile(t, filepath.Join(home, ".codex", "config.toml"), codex)

	cfg := filepath.Join(work, "proxy.toml")
	diff, _ := runManifold(t, work, env, "import", "claude-code", "codex", "--config", cfg)
	if _, err := os.Stat(cfg); err == nil {
		t.Fatal("import without --write wrote the config")
	}
	if strings.Contains(diff, "inline-secret-0123456789") {
		t.Errorf("the import diff shows an inline secret:\n%s", diff)
	}
	_, stderr := runManifold(t, work, env, "import", "claude-code", "codex", "--config", cfg, "--write")
	body, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatalf("import --write: %v\n%s", err, stderr)
	}
	if strings.Contains(string(body), "inline-secret-0123456789") || !strings.Contains(string(body), "${API_TOKEN}") {
		t.Errorf("proxy.toml holds the inline secret or lacks ${API_TOKEN}:\n%s", body)
	}
	var doc struct {
		Servers map[string]map[string]any `toml:"servers"`
	}
	if _, err := toml.Decode(string(body), &doc); err != nil {
		t.Fatal(err)
	}
	want := []string{"alpha", "beta", "shared"}
	if haveMemory {
		want = append(want, "memory")
		servers["memory"] = nil
	}
	var got []string
	for n := range doc.Servers {
		got = append(got, n)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("imported servers %v, want %v (the Codex gamma merged into shared):\n%s", got, want, body)
	}
	env = append(env, "API_TOKEN=from-the-environment")
	runManifold(t, work, env, "check", "--config", cfg)

	// Connect into both, removing what was imported.
	runManifold(t, work, env, "connect", "claude-code", "--config", cfg, "--replace", "--yes")
	runManifold(t, work, env, "connect", "codex", "--config", cfg, "--replace", "--yes")
	out, _ := runManifold(t, work, env, "connect", "codex", "--config", cfg, "--replace", "--yes")
	if !strings.Contains(out, "nothing to change") {
		t.Errorf("connecting Codex again: %s", out)
	}

	var cc struct {
		NumStartups int `json:"numStartups"`
		MCPServers  map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	data, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
	if err := json.Unmarshal(data, &cc); err != nil {
		t.Fatal(err)
	}
	if cc.NumStartups != 4 || len(cc.MCPServers) != 1 {
		t.Fatalf("~/.claude.json after connect --replace: want only Manifold's entry and the other keys kept:\n%s", data)
	}
	var cx struct {
		Model      string `toml:"model"`
		MCPServers map[string]struct {
			Command string   `toml:"command"`
			Args    []string `toml:"args"`
		} `toml:"mcp_servers"`
	}
	data, _ = os.ReadFile(filepath.Join(home, ".codex", "config.toml"))
	if _, err := toml.Decode(string(data), &cx); err != nil {
		t.Fatal(err)
	}
	if cx.Model != "gpt-5-codex" || len(cx.MCPServers) != 1 || !strings.HasPrefix(string(data), "# my Codex settings\n") {
		t.Fatalf("~/.codex/config.toml after connect --replace:\n%s", data)
	}

	entries := map[string]struct {
		command string
		args    []string
	}{
		"claude-code": {cc.MCPServers["manifold"].Command, cc.MCPServers["manifold"].Args},
		"codex":       {cx.MCPServers["manifold"].Command, cx.MCPServers["manifold"].Args},
	}
	for client, e := range entries {
		t.Run(client, func(t *testing.T) {
			if !filepath.IsAbs(e.command) || !slices.Contains(e.args, cfg) {
				t.Fatalf("entry %s %v: want an absolute binary and the config path", e.command, e.args)
			}
			cmd := command(e.command, e.args...)
			cmd.Dir, cmd.Env = t.TempDir(), env // a client's folder is not the config's
			var errb syncBuffer
			cmd.Stderr = &errb
			ctx, cancel := context.WithTimeout(testCtx(t), testTimeout)
			defer cancel()
			// Each client as it names itself (Codex: its rmcp client's name),
			// so that both get the full list they search themselves.
			info := map[string]string{"claude-code": "claude-code", "codex": "codex-mcp-client"}[client]
			cs, err := mcp.NewClient(&mcp.Implementation{Name: info, Version: "0"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatalf("start %s's entry: %v\n%s", client, err, errb.String())
			}
			defer cs.Close()
			// Every imported server's tools, once each has started.
			var names []string
			for deadline := time.Now().Add(60 * time.Second); ; {
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				names = names[:0]
				for _, tl := range res.Tools {
					names = append(names, tl.Name)
				}
				all := true
				for s := range servers {
					if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, s+"__") }) {
						all = false
					}
				}
				if all || time.Now().After(deadline) {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			// Codex's disabled_tools stays on the merged server.
			if slices.Contains(names, "shared__fail") || !slices.Contains(names, "alpha__fail") {
				t.Errorf("shared__fail listed or alpha__fail missing: Codex's disabled_tools of the merged server is lost: %v", names)
			}
			for s, args := range servers {
				if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, s+"__") }) {
					t.Errorf("no tool of %s among %v\nstderr:\n%s", s, names, errb.String())
					continue
				}
				if args == nil {
					continue
				}
				name := s
				if s == "shared" {
					name = "gamma"
				}
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: s + "__echo", Arguments: map[string]any{"message": "hi"}})
				if err != nil || res.IsError || len(res.Content) == 0 {
					t.Errorf("call %s__echo: %v %+v", s, err, res)
					continue
				}
				if txt, _ := res.Content[0].(*mcp.TextContent); txt == nil || txt.Text != name+": hi" {
					t.Errorf("%s__echo answered %+v, want %q", s, res.Content[0], name+": hi")
				}
			}
		})
	}
}

// TestConnectClientCLIs connects Manifold into Claude Code and Gemini CLI
// with manifold connect, in a throwaway home, and has each client's own CLI
// report it connected.
func TestConnectClientCLIs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ client, bin string }{{"claude-code", "claude"}, {"gemini", "gemini"}} {
		t.Run(tc.client, func(t *testing.T) {
			t.Parallel()
			bin := clientBin(t, tc.bin)
			cfg := writeConfig(t, fixture("fx", nil))
			home, work := t.TempDir(), t.TempDir()
			if tc.client == "gemini" {
				trusted, _ := json.Marshal(map[string]string{work: "TRUST_FOLDER"})
				writeFile(t, filepath.Join(home, ".gemini", "trustedFolders.json"), string(trusted))
			}
			runManifold(t, work, homeEnv(home), "connect", tc.client, "--config", cfg, "--yes")
			got := runClient(t, work, clientEnv(home), bin, "mcp", "list")
			if !strings.Contains(got, "manifold: "+manifoldBin) || !strings.Contains(got, "Connected") {
				t.Fatalf("%s mcp list does not report manifold connected after manifold connect:\n%s", tc.bin, got)
			}
		})
	}
}

// TestDoctorRunningInstance: manifold doctor reads the status file of a
// manifold a client runs over stdio, and reports its server that failed to
// start, with the running instance's tool count, and the client connected
// to it: its name, protocol, capabilities and list, and the name that this
// client would refuse behind the long entry name its configuration gives
// Manifold.
func TestDoctorRunningInstance(t *testing.T) {
	t.Parallel()
	cache := t.TempDir() // status files, the test's own
	setProcEnv(t, "XDG_CACHE_HOME="+cache)
	// alpha lists a tool whose name is shortened to Manifold's default 49
	// characters: too long behind a longer entry name. broken is marked
	// failed after its max_failures starts: a short backoff between them, so
	// that the test does not wait out the default's 7.5 s.
	cfg := writeConfig(t, fixture("alpha", nil)+"\n[servers.broken]\ncommand = \"/nonexistent/mcp-server\"\n[servers.broken.restart]\ninitial_backoff = \"50ms\"\n")
	client := mcp.NewClient(&mcp.Implementation{Name: "claude-code", Version: "2.1.332"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	sp := startStdioClient(t, cfg, client, protocolVersion)
	listTools(testCtx(t), t, sp.cs)
	home := t.TempDir()
	entry := "manifold-gateway-for-the-whole-team"
	claude, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{entry: map[string]any{
		"command": manifoldBin, "args": []string{"serve", "--config", cfg}}}})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), claude, 0o600); err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Instances []struct {
			PID     int `json:"pid"`
			Tools   int `json:"tools"`
			Servers []struct {
				Name, State string
			} `json:"servers"`
			Clients []struct {
				Name, Version, Protocol, Catalog, Client string
				Capabilities                             []string
				Tools                                    int
				Mangled                                  []string
			} `json:"clients"`
		} `json:"instances"`
		Problems []string `json:"problems"`
	}
	waitFor(t, 20*time.Second, "the running instance and its client in manifold doctor --json", func() bool {
		cmd := commandContext(testCtx(t), manifoldBin, "doctor", "--json", "--config", cfg)
		cmd.Env = append(homeEnv(home), "XDG_CACHE_HOME="+cache)
		out, _ := cmd.Output() // exits 1: there are problems
		if json.Unmarshal(out, &rep) != nil || len(rep.Instances) != 1 || len(rep.Instances[0].Clients) != 1 {
			return false
		}
		for _, s := range rep.Instances[0].Servers {
			if s.Name == "broken" && s.State == "failed" {
				return true
			}
		}
		return false
	})
	in := rep.Instances[0]
	if in.PID != sp.pid() || in.Tools == 0 {
		t.Errorf("instance %+v, want pid %d with alpha's tools", in, sp.pid())
	}
	c := in.Clients[0]
	if c.Name != "claude-code" || c.Version != "2.1.332" || c.Protocol != protocolVersion || c.Client != "claude-code" ||
		c.Catalog != "full" || c.Tools != in.Tools || !slices.Contains(c.Capabilities, "elicitation") || slices.Contains(c.Capabilities, "sampling") {
		t.Errorf("client %+v, want claude-code 2.1.332 at %s, full list of %d tools, elicitation and no sampling", c, protocolVersion, in.Tools)
	}
	if len(c.Mangled) != 1 || !strings.Contains(c.Mangled[0], "alpha__this_is_a_very_long_tool_name") || !strings.Contains(c.Mangled[0], "over 64") {
		t.Errorf("names the client would refuse behind %q = %q, want alpha's long tool alone", entry, c.Mangled)
	}
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"/nonexistent/mcp-server does not exist", "server broken of the running manifold (pid " + fmt.Sprint(sp.pid()) + ") is failed",
		"Claude Code connected to the running manifold (pid " + fmt.Sprint(sp.pid()) + ")", "manifold tools --client claude-code --entry " + entry} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem saying %q among:\n%s", want, all)
		}
	}
	// The terminal report says it too.
	cmd := commandContext(testCtx(t), manifoldBin, "doctor", "--config", cfg)
	cmd.Env = append(homeEnv(home), "XDG_CACHE_HOME="+cache)
	out, _ := cmd.Output()
	if !strings.Contains(string(out), "client claude-code 2.1.332, protocol "+protocolVersion+", elicitation") || !strings.Contains(string(out), "; full list") {
		t.Errorf("manifold doctor does not show the connected client:\n%s", out)
	}
}
