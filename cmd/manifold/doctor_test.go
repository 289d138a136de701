package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctor finds a Claude Code file whose Manifold entry serves another
// config and still runs a server proxy.toml has, and a Codex entry that
// would not pass the config's ${VAR} on; each finding names its fix.
func TestDoctor(t *testing.T) {
	home, cfg := clientHome(t)
	body := "[servers.memory]\ncommand = \"/bin/sh\"\nargs = [\"memory-server\"]\nenv = { TOKEN = \"${API_TOKEN}\" }\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("API_TOKEN", "set-for-the-check")
	claude := `{"mcpServers":{
		"manifold":{"command":"/bin/sh","args":["serve","--config","/elsewhere/proxy.toml"]},
		"memory":{"command":"/bin/sh","args":["memory-server"]}}}`
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(claude), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	codex := "[mcp_servers.manifold]\ncommand = \"/bin/sh\"\nargs = [\"serve\", \"--config\", " + jsonQuote(cfg) + "]\n"
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(codex), 0o600); err != nil {
		t.Fatal(err)
	}

	out, _, err := runCmd(t, "doctor", "--config", cfg, "--json")
	if err == nil {
		t.Fatal("doctor found no problem")
	}
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(rep.Clients) != 2 || !rep.Clients[0].Manifold || rep.Clients[0].ConfigPath != "/elsewhere/proxy.toml" ||
		strings.Join(rep.Clients[0].Duplicates, ",") != "memory" || !rep.Clients[1].Manifold {
		t.Errorf("clients: %+v", rep.Clients)
	}
	all := strings.Join(rep.Problems, "\n")
	for _, want := range []string{
		"serves /elsewhere/proxy.toml, not " + cfg + "; run manifold connect claude-code",
		"also runs memory, which Manifold serves",
		`add env_vars = ["API_TOKEN"] to [mcp_servers.manifold]`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no problem saying %q among:\n%s", want, all)
		}
	}
	if strings.Contains(out, "set-for-the-check") {
		t.Errorf("doctor shows the value of a variable:\n%s", out)
	}

	text, _, _ := runCmd(t, "doctor", "--config", cfg)
	if !strings.Contains(text, "Manifold is the entry \"manifold\", serving /elsewhere/proxy.toml") || !strings.Contains(text, "3 problems:") {
		t.Errorf("text report:\n%s", text)
	}
}

func jsonQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
