package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/manifold-mcp/manifold/internal/config"
)

// TestImportWritesWhereServeLooks: with no config anywhere, import --write
// writes the user's config folder's proxy.toml (as init does), which serve
// finds from any folder, not ./proxy.toml; it says where, in full.
func TestImportWritesWhereServeLooks(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"APPDATA": "", "CODEX_HOME": "", "CLAUDE_CONFIG_DIR": "", "MANIFOLD_CONFIG": ""} {
		t.Setenv(k, v)
	}
	claude := `{"mcpServers": {"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]}}}`
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(claude), 0o600); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	t.Chdir(work)

	_, stderr, err := runCmd(t, "import", "claude-code", "--write")
	if err != nil {
		t.Fatalf("import --write: %v\n%s", err, stderr)
	}
	want := filepath.Join(home, ".config", "manifold", "proxy.toml")
	data, err := os.ReadFile(want)
	if err != nil || !strings.Contains(string(data), "[servers.memory]") {
		t.Fatalf("import --write did not write %s: %v\n%s\nstderr:\n%s", want, err, data, stderr)
	}
	if _, err := os.Stat(filepath.Join(work, "proxy.toml")); err == nil {
		t.Errorf("import --write wrote ./proxy.toml")
	}
	if !strings.Contains(stderr, "Wrote "+want+":") {
		t.Errorf("import does not say where it wrote (%s):\n%s", want, stderr)
	}
	if got := config.Path(""); got != want {
		t.Errorf("serve would read %q, not what import wrote (%q)", got, want)
	}

	// A ./proxy.toml that exists is the one serve reads here: import adds to it.
	if err := os.WriteFile(filepath.Join(work, "proxy.toml"), []byte("# mine\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err = runCmd(t, "import", "claude-code", "--write"); err != nil {
		t.Fatalf("import --write: %v\n%s", err, stderr)
	}
	if data, _ := os.ReadFile(filepath.Join(work, "proxy.toml")); !strings.Contains(string(data), "[servers.memory]") {
		t.Errorf("import --write did not add to ./proxy.toml:\n%s", data)
	}
	if !strings.Contains(stderr, "Wrote "+filepath.Join(work, "proxy.toml")+":") {
		t.Errorf("import does not say where it wrote:\n%s", stderr)
	}
}
