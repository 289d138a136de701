package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// clientHome makes a throwaway home for the client files and a proxy.toml,
// and returns both.
func clientHome(t *testing.T) (home, cfg string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
	t.Setenv("APPDATA", "")
	t.Setenv("CODEX_HOME", "")
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("MANIFOLD_CONFIG", "")
	cfg = filepath.Join(home, "proxy.toml")
	body := "[servers.memory]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-memory\"]\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, cfg
}

func runCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

// TestConnectUndo connects into an existing Claude Code file with
// comments-free JSON of its own, checks the backup and that a second
// connect changes nothing, then undoes: the file is back byte for byte.
// Undoing a connect that created the file removes it.
func TestConnectUndo(t *testing.T) {
	home, cfg := clientHome(t)
	file := filepath.Join(home, ".claude.json")
	orig := "{\n  \"numStartups\": 3,\n  \"mcpServers\": {\n    \"memory\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-memory\"]}\n  },\n  \"tipsHistory\": {\"x\": 1}\n}"
	if err := os.WriteFile(file, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}

	// Without --yes and no answer: a preview, nothing written.
	out, _, err := runCmd(t, "connect", "claude-code", "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `+    "manifold": {`) {
		t.Errorf("no preview diff of the new entry:\n%s", out)
	}
	if got, _ := os.ReadFile(file); string(got) != orig {
		t.Fatalf("written without --yes:\n%s", got)
	}

	if _, stderr, err := runCmd(t, "connect", "claude-code", "--config", cfg, "--replace", "--yes"); err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	got, _ := os.ReadFile(file)
	if !strings.Contains(string(got), `"manifold"`) || strings.Contains(string(got), `"memory"`) || !strings.Contains(string(got), `"tipsHistory": {"x": 1}`) {
		t.Errorf("connected file:\n%s", got)
	}
	if st, _ := os.Stat(file); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 kept", st.Mode().Perm())
	}
	bs, _ := backups(file)
	if len(bs) != 1 {
		t.Fatalf("backups %v, want one", bs)
	}

	out, _, err = runCmd(t, "connect", "claude-code", "--config", cfg, "--replace", "--yes")
	if err != nil || !strings.Contains(out, "nothing to change") {
		t.Errorf("second connect: %v\n%s", err, out)
	}
	if bs, _ := backups(file); len(bs) != 1 {
		t.Errorf("a connect that changes nothing made a backup: %v", bs)
	}

	if _, stderr, err := runCmd(t, "connect", "--undo", "claude-code", "--yes"); err != nil {
		t.Fatalf("undo: %v\n%s", err, stderr)
	}
	if got, _ := os.ReadFile(file); string(got) != orig {
		t.Errorf("undo did not restore the bytes:\n%q\nwant\n%q", got, orig)
	}
	if bs, _ := backups(file); len(bs) != 0 {
		t.Errorf("the used backup is still there: %v", bs)
	}
	if _, _, err := runCmd(t, "connect", "--undo", "claude-code", "--yes"); err == nil {
		t.Error("undo without a backup succeeded")
	}

	// A file that did not exist: undo removes it.
	cursor := filepath.Join(home, ".cursor", "mcp.json")
	if _, stderr, err := runCmd(t, "connect", "cursor", "--config", cfg, "--yes"); err != nil {
		t.Fatalf("connect cursor: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(cursor); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runCmd(t, "connect", "cursor", "--undo", "--yes"); err != nil {
		t.Fatalf("undo cursor: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(cursor); !os.IsNotExist(err) {
		t.Errorf("undo left the file connect created: %v", err)
	}
}

// TestConnectSymlink writes through a symlinked client file to its target
// (the link stays a link), and refuses a link to something that is not a
// regular file.
func TestConnectSymlink(t *testing.T) {
	home, cfg := clientHome(t)
	dots := filepath.Join(home, "dotfiles")
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dots, 0o700); err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dots, "codex.toml")
	if err := os.WriteFile(real, []byte("model = \"o3\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(home, ".codex", "config.toml")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runCmd(t, "connect", "codex", "--config", cfg, "--yes"); err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link is no longer a link: %v", err)
	}
	if got, _ := os.ReadFile(real); !strings.Contains(string(got), "[mcp_servers.manifold]") || !strings.HasPrefix(string(got), "model = \"o3\"\n") {
		t.Errorf("target:\n%s", got)
	}

	gem := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(gem, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dots, filepath.Join(gem, "settings.json")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runCmd(t, "connect", "gemini", "--config", cfg, "--yes"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a link to a folder: %v, want a refusal", err)
	}
}

// TestConnectPreviewHidesSecrets: the preview diff shows the client's file
// around the change, and --replace shows the removed entries; neither
// shows the inline secrets in them.
func TestConnectPreviewHidesSecrets(t *testing.T) {
	home, cfg := clientHome(t)
	file := filepath.Join(home, ".cursor", "mcp.json")
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	secrets := []string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "plain-secret-value-42", "hunter2hunter2"}
	body := `{
  "mcpServers": {
    "memory": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory", "--api-key", "` + secrets[2] + `"],
      "env": { "GITHUB_TOKEN": "` + secrets[0] + `", "API_KEY": "` + secrets[1] + `" }
    },
    "other": { "url": "https://me:` + secrets[2] + `@x.example/mcp" }
  }
}
`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// proxy.toml has memory with the same command and args: --replace removes it.
	toml := "[servers.memory]\ncommand = \"npx\"\nargs = [\"-y\", \"@modelcontextprotocol/server-memory\", \"--api-key\", \"${MEMORY_API_KEY}\"]\n"
	if err := os.WriteFile(cfg, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMORY_API_KEY", "x")
	out, stderr, err := runCmd(t, "connect", "cursor", "--config", cfg, "--replace")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(out, "+    \"manifold\"") || !strings.Contains(out, "-    \"memory\"") {
		t.Fatalf("no preview:\n%s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out+stderr, s) {
			t.Errorf("the preview shows the secret %q:\n%s%s", s, out, stderr)
		}
	}
}

// TestConnectCodexModern opts Codex into 2026-07-28: the feature flag and
// the entry's protocol variable are written, which the config Codex reads
// back holds; a plain connect says how to opt in; --modern is refused for a
// client that chooses its version itself.
func TestConnectCodexModern(t *testing.T) {
	home, cfg := clientHome(t)
	file := filepath.Join(home, ".codex", "config.toml")
	_, stderr, err := runCmd(t, "connect", "codex", "--config", cfg, "--yes")
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "--modern") {
		t.Errorf("a plain Codex connect does not say how to opt into 2026-07-28:\n%s", stderr)
	}
	if got, _ := os.ReadFile(file); strings.Contains(string(got), "mcp_2026_07_28") {
		t.Errorf("the feature was turned on without --modern:\n%s", got)
	}
	if _, stderr, err := runCmd(t, "connect", "codex", "--config", cfg, "--modern", "--yes"); err != nil {
		t.Fatalf("connect --modern: %v\n%s", err, stderr)
	}
	var doc struct {
		Features map[string]bool `toml:"features"`
		Servers  map[string]struct {
			Env map[string]string `toml:"env"`
		} `toml:"mcp_servers"`
	}
	if _, err := toml.DecodeFile(file, &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.Features["mcp_2026_07_28"] || doc.Servers["manifold"].Env["CODEX_MCP_PROTOCOL_VERSION"] != "2026-07-28" {
		t.Errorf("Codex config after --modern: %+v", doc)
	}
	if _, _, err := runCmd(t, "connect", "claude-code", "--config", cfg, "--modern", "--yes"); err == nil || !strings.Contains(err.Error(), "for Codex") {
		t.Errorf("--modern for Claude Code: %v, want refused", err)
	}
}

// TestConnectUndoWithoutTerminal: an undo that nobody could confirm (no
// terminal, no --yes) restores nothing and exits 1; an answer on a pipe
// still counts.
func TestConnectUndoWithoutTerminal(t *testing.T) {
	home, cfg := clientHome(t)
	file := filepath.Join(home, ".claude.json")
	orig := "{\"numStartups\": 3}"
	if err := os.WriteFile(file, []byte(orig), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := runCmd(t, "connect", "claude-code", "--config", cfg, "--yes"); err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	connected, _ := os.ReadFile(file)

	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, stdin := range []io.Reader{strings.NewReader(""), devNull, strings.NewReader("n\n")} {
		var out, errb bytes.Buffer
		err := run(context.Background(), []string{"connect", "--undo", "claude-code"}, stdin, &out, &errb)
		var ee exitError
		if !errors.As(err, &ee) || ee.code != 1 || !strings.Contains(ee.msg, "nothing restored") {
			t.Errorf("undo without a terminal and without --yes (stdin %T): %v, want exit 1 saying nothing was restored\n%s", stdin, err, errb.String())
		}
		if got, _ := os.ReadFile(file); string(got) != string(connected) {
			t.Errorf("undo without --yes changed the file:\n%s", got)
		}
	}
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"connect", "--undo", "claude-code"}, strings.NewReader("y\n"), &out, &errb); err != nil {
		t.Fatalf("undo answered yes on a pipe: %v\n%s", err, errb.String())
	}
	if got, _ := os.ReadFile(file); string(got) != orig {
		t.Errorf("undo answered yes did not restore the file:\n%s", got)
	}
}
