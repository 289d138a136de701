package config

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSupervisionKeys(t *testing.T) {
	doc := `
[servers.files]
command = "npx"
[servers.files.health]
tool = "list_allowed_directories"
arguments = { path = "." }
expect = "/"
interval = "15s"
timeout = "2s"
failures = 2
[servers.files.restart]
enabled = true
initial_backoff = "1s"
max_backoff = "10s"
max_failures = 3
failure_window = "30s"
failed_retry = "2m"
`
	cfg, err := ParseEnv("proxy.toml", []byte(doc), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Servers[0]
	want := &Health{Tool: "list_allowed_directories", Arguments: json.RawMessage(`{"path":"."}`), Expect: "/",
		Interval: 15 * time.Second, Timeout: 2 * time.Second, Failures: 2}
	if diff := cmp.Diff(want, s.Health); diff != "" {
		t.Errorf("Health (-want +got):\n%s", diff)
	}
	wantR := Restart{InitialDelay: time.Second, MaxDelay: 10 * time.Second, MaxFailures: 3, FailureWindow: 30 * time.Second, FailedRetry: 2 * time.Minute}
	if diff := cmp.Diff(wantR, s.Restart); diff != "" {
		t.Errorf("Restart (-want +got):\n%s", diff)
	}
}

func TestSupervisionErrors(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"no target", "[servers.a]\ncommand = \"x\"\n[servers.a.health]\nexpect = \"ok\"\n", "needs tool"},
		{"both targets", "[servers.a]\ncommand = \"x\"\n[servers.a.health]\ntool = \"t\"\nresource = \"r://x\"\n", "not both"},
		{"unknown key", "[servers.a]\ncommand = \"x\"\n[servers.a.health]\ntool = \"t\"\nexpected = \"ok\"\n", `servers.a.health.expected: unknown key; did you mean "expect"?`},
		{"bad failures", "[servers.a]\ncommand = \"x\"\n[servers.a.health]\ntool = \"t\"\nfailures = 0\n", "out of range"},
		{"restart order", "[servers.a]\ncommand = \"x\"\n[servers.a.restart]\ninitial_backoff = \"1m\"\nmax_backoff = \"1s\"\n", "larger than max_backoff"},
		{"restart unknown", "[servers.a]\ncommand = \"x\"\n[servers.a.restart]\nmax_crashes = 3\n", `servers.a.restart.max_crashes: unknown key; valid keys here are`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "proxy.toml:") {
				t.Errorf("error = %v, want one starting with proxy.toml: and containing %q", err, tt.want)
			}
		})
	}
}
