package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An unset variable in a server's env, headers or args leaves that server
// out (Config.LeftOut) and the others load; anywhere else it stays an error.
func TestUnsetVariableLeavesServerOut(t *testing.T) {
	doc := `[servers.a]
command = "a"
env = { TOKEN = "${GONE}" }

[servers.b]
command = "b"
args = ["--root", "${GONE_TOO}", "${GONE}"]

[servers.c]
url = "https://example.invalid/mcp"
headers = { Authorization = "Bearer ${GONE}" }

[servers.d]
command = "d"
env = { TOKEN = "${SET}" }
`
	cfg, err := ParseEnv("proxy.toml", []byte(doc), env(map[string]string{"SET": "the-secret-value"}))
	if err != nil {
		t.Fatalf("ParseEnv: %v", err)
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"d"}, names); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	want := []LeftOut{
		{"a", "proxy.toml:3:9: servers.a.env.TOKEN: environment variable GONE is not set; set it, or write ${GONE:-default} to fall back to a default"},
		{"b", "proxy.toml:7:1: servers.b.args: environment variable GONE_TOO is not set; set it, or write ${GONE_TOO:-default} to fall back to a default; " +
			"proxy.toml:7:1: servers.b.args: environment variable GONE is not set; set it, or write ${GONE:-default} to fall back to a default"},
		{"c", "proxy.toml:11:13: servers.c.headers.Authorization: environment variable GONE is not set; set it, or write ${GONE:-default} to fall back to a default"},
	}
	if diff := cmp.Diff(want, cfg.LeftOut); diff != "" {
		t.Errorf("left out (-want +got):\n%s", diff)
	}
	for _, l := range cfg.LeftOut {
		if strings.Contains(l.Err, "the-secret-value") {
			t.Errorf("%s: the error shows a secret: %s", l.Name, l.Err)
		}
	}

	// Elsewhere, and in a required server, an unset variable is a config error.
	for _, doc := range []string{
		"[servers.a]\ncommand = \"a\"\nenv = { TOKEN = \"${GONE}\" }\nrequired = true\n",
		"[servers.a]\nurl = \"https://${GONE}/mcp\"\n",
		"[servers.a]\ncommand = \"${GONE}\"\n",
		"[http]\nlisten = \"${GONE}\"\n[servers.a]\ncommand = \"a\"\n",
	} {
		if _, err := ParseEnv("proxy.toml", []byte(doc), env(nil)); err == nil || !strings.Contains(err.Error(), "GONE is not set") {
			t.Errorf("ParseEnv(%q) = %v, want the unset variable as an error", doc, err)
		}
	}
}
