package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSecrets: the loader records every expanded value (but paths) and the
// literal credentials of the servers and plugins.
func TestSecrets(t *testing.T) {
	doc := `
[servers.remote]
url = "https://user:pa55w0rd@example.invalid/mcp?api_key=${QUERY_KEY}&tenant=acme-corp"
headers = { Authorization = "Bearer ${HEADER_TOKEN}", X-Api-Key = "literal-api-key", Accept = "application/json" }

[servers.local]
command = "${HOME}/bin/server"
args = ["--token", "${ARG_TOKEN}", "--password=literal-pass", "--name", "visible-name"]
env = { API_SECRET = "literal-env-secret", LOG_LEVEL = "verbose-level", WHO = "${WHO}" }

[plugins.p]
path = "bin/p"
args = ["--api-key", "plugin-arg-key"]
env = { PATH = "${PATH}", DB_PASSWORD = "plugin-env-pass" }
`
	cfg, err := ParseEnv("proxy.toml", []byte(doc), env(map[string]string{
		"QUERY_KEY": "query-secret", "HEADER_TOKEN": "header-secret", "ARG_TOKEN": "arg-secret",
		"HOME": "/home/someone", "PATH": "/usr/bin:/bin", "WHO": "expanded-anywhere",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Bearer header-secret", "acme-corp", "arg-secret", "expanded-anywhere", "header-secret",
		"literal-api-key", "literal-env-secret", "literal-pass", "pa55w0rd", "plugin-arg-key",
		"plugin-env-pass", "query-secret",
	}
	if diff := cmp.Diff(want, cfg.Secrets); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

// TestProblemsHideSecrets: a problem's message never shows an expanded value
// (it names the variable instead) nor a literal credential.
func TestProblemsHideSecrets(t *testing.T) {
	const token = "tok-3xp4nd3d-value"
	doc := `
startup_timeout = "${TOKEN}"

[servers.remote]
url = "ftp://admin:literal-pw-1@example.invalid/mcp?token=literal-query-1"
headers = { Authorization = "Bearer literal-bearer-1" }
transport = "Bearer literal-bearer-1"
call_timeout = "${TOKEN}"
start = "sk-abcdefghijklmnopqrstuvwx"
`
	_, err := ParseEnv("proxy.toml", []byte(doc), env(map[string]string{"TOKEN": token}))
	got := problems(t, err)
	want := []string{
		`proxy.toml:2:1: startup_timeout: "${TOKEN}" is not a duration; write it like "30s", "750ms" or "2m"`,
		`proxy.toml:5:1: servers.remote.url: "ftp://[redacted]@example.invalid/mcp?token=[redacted]" is not an http:// or https:// URL with a host; write it like "https://example.com/mcp"`,
		`proxy.toml:7:1: servers.remote.transport: "[redacted]" is not a transport; use "streamable" (the default) or "sse"`,
		`proxy.toml:8:1: servers.remote.call_timeout: "${TOKEN}" is not a duration; write it like "30s", "750ms" or "2m"`,
		`proxy.toml:9:1: servers.remote.start: "[redacted]" is not a start mode; write "eager" (start with the proxy, the default) or "lazy" (start on the first call)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	for _, s := range []string{token, "literal-pw-1", "literal-query-1", "literal-bearer-1", "sk-abc"} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("the error shows %q:\n%v", s, err)
		}
	}
}
