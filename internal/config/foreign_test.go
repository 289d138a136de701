package config

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Keys carried over from other clients' formats get a targeted message.
func TestForeignKeys(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want string
	}{
		{
			name: "type stdio",
			doc:  "[servers.a]\ncommand = \"a\"\ntype = \"stdio\"\n",
			want: `proxy.toml:3:1: servers.a.type: unknown key; not needed: a server with command is stdio; remove it`,
		},
		{
			name: "type http",
			doc:  "[servers.a]\nurl = \"https://example.com/mcp\"\ntype = \"http\"\n",
			want: `proxy.toml:3:1: servers.a.type: unknown key; not needed: a server with url speaks streamable HTTP; remove it`,
		},
		{
			name: "type sse",
			doc:  "[servers.a]\nurl = \"https://example.com/sse\"\ntype = \"sse\"\n",
			want: `proxy.toml:3:1: servers.a.type: unknown key; write transport = "sse" (next to url) instead`,
		},
		{
			name: "codex startup_timeout_sec",
			doc:  "[servers.a]\ncommand = \"a\"\nstartup_timeout_sec = 20\n",
			want: `proxy.toml:3:1: servers.a.startup_timeout_sec: unknown key; write startup_timeout = "20s" instead (a duration with a unit)`,
		},
		{
			name: "codex tool_timeout_sec",
			doc:  "[servers.a]\ncommand = \"a\"\ntool_timeout_sec = 90\n",
			want: `proxy.toml:3:1: servers.a.tool_timeout_sec: unknown key; write call_timeout = "90s" instead (a duration with a unit; startup_timeout bounds the start)`,
		},
		{
			name: "gemini timeout in ms",
			doc:  "[servers.a]\ncommand = \"a\"\ntimeout = 30000\n",
			want: `proxy.toml:3:1: servers.a.timeout: unknown key; write call_timeout = "30000ms" instead (a duration with a unit; startup_timeout bounds the start)`,
		},
		{
			name: "codex disabled_tools",
			doc:  "[servers.a]\ncommand = \"a\"\ndisabled_tools = [\"x\"]\n",
			want: `proxy.toml:3:1: servers.a.disabled_tools: unknown key; write tools.deny = [...] instead (globs of the server's own tool names)`,
		},
		{
			name: "codex enabled_tools",
			doc:  "[servers.a]\ncommand = \"a\"\nenabled_tools = [\"x\"]\n",
			want: `proxy.toml:3:1: servers.a.enabled_tools: unknown key; write tools.allow = [...] instead (globs of the server's own tool names)`,
		},
		{
			name: "gemini httpUrl",
			doc:  "[servers.a]\nhttpUrl = \"https://example.com/mcp\"\n",
			want: `proxy.toml:2:1: servers.a.httpUrl: unknown key; write url = "https://example.com/mcp" instead`,
		},
		{
			name: "windsurf serverUrl",
			doc:  "[servers.a]\nserverUrl = \"https://example.com/mcp\"\n",
			want: `proxy.toml:2:1: servers.a.serverUrl: unknown key; write url = "https://example.com/mcp" instead`,
		},
		{
			name: "cline autoApprove",
			doc:  "[servers.a]\ncommand = \"a\"\nautoApprove = [\"x\"]\n",
			want: `proxy.toml:3:1: servers.a.autoApprove: unknown key; not needed: Manifold approves no call itself (your client asks); to choose which tools exist, write tools.allow or tools.deny`,
		},
		{
			name: "roo alwaysAllow",
			doc:  "[servers.a]\ncommand = \"a\"\nalwaysAllow = [\"x\"]\n",
			want: `proxy.toml:3:1: servers.a.alwaysAllow: unknown key; not needed: Manifold approves no call itself (your client asks); to choose which tools exist, write tools.allow or tools.deny`,
		},
		{
			name: "codex enabled false",
			doc:  "[servers.a]\ncommand = \"a\"\nenabled = false\n",
			want: `proxy.toml:3:1: servers.a.enabled: unknown key; write disabled = true instead`,
		},
		{
			name: "codex bearer_token_env_var",
			doc:  "[servers.a]\nurl = \"https://example.com/mcp\"\nbearer_token_env_var = \"GH\"\n",
			want: `proxy.toml:3:1: servers.a.bearer_token_env_var: unknown key; write headers = { Authorization = "Bearer ${GH}" } instead`,
		},
		{
			name: "codex mcp_servers",
			doc:  "[mcp_servers.a]\ncommand = \"a\"\n",
			want: `proxy.toml:1:2: mcp_servers: unknown key; Manifold's servers are [servers.NAME] tables: write [servers.NAME] instead of [mcp_servers.NAME]`,
		},
		{
			name: "a misspelling keeps its did-you-mean",
			doc:  "[servers.a]\ncommand = \"a\"\nargz = []\n",
			want: `proxy.toml:3:1: servers.a.argz: unknown key; did you mean "args"?`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if diff := cmp.Diff([]string{tt.want}, problems(t, err)); diff != "" {
				t.Errorf("ParseEnv problems (-want +got):\n%s", diff)
			}
		})
	}
}

// Check reports commands that cannot be run, where they are written; Load
// leaves them to the start of each server.
func TestCheckCommands(t *testing.T) {
	dir := t.TempDir()
	for name, mode := range map[string]os.FileMode{"server": 0o755, "notexec": 0o644} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	doc := "[servers.good]\ncommand = \"server\"\n" + // 1-2: found in PATH
		"[servers.missing]\ncommand = \"no-such-server\"\n" + // 3-4
		"[servers.relative]\ncommand = \"./server\"\n" + // 5-6: the file's folder
		"[servers.gone]\ncommand = \"./gone\"\n" + // 7-8
		"[servers.plain]\ncommand = \"./notexec\"\n" + // 9-10
		"[servers.off]\ndisabled = true\ncommand = \"nothing\"\n" + // 11-13: disabled, not checked
		"[plugins.p]\npath = \"bin/p\"\n" // 14-15
	path := filepath.Join(dir, "proxy.toml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Errorf("Load checks commands: %v", err)
	}
	_, err := Check(path, exec.LookPath)
	want := []string{
		path + `:4:1: servers.missing.command: "no-such-server" is not found in PATH (looked up as the shell does; a client may start manifold with a shorter PATH than yours); install it, or write its full path, like command = "/usr/local/bin/no-such-server"`,
		path + ":8:1: servers.gone.command: " + filepath.Join(dir, "gone") + " does not exist; fix the path (a relative one is relative to this file's folder) or build the program",
		path + ":10:1: servers.plain.command: " + filepath.Join(dir, "notexec") + " is not an executable file; make it one (chmod +x " + filepath.Join(dir, "notexec") + ") or fix the path",
		path + ":15:1: plugins.p.path: " + filepath.Join(dir, "bin", "p") + " does not exist; fix the path (a relative one is relative to this file's folder) or build the program",
	}
	if diff := cmp.Diff(want, problems(t, err)); diff != "" {
		t.Errorf("Check problems (-want +got):\n%s", diff)
	}
}
