package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseProtocol(t *testing.T) {
	dir := t.TempDir()
	key := strings.Repeat("k", MinStateKeyBytes)
	write := func(name, body string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("good.key", key+"\n", 0o600)
	open := write("open.key", key, 0o644)
	short := write("short.key", "abc\n", 0o600)
	cfgPath := filepath.Join(dir, "proxy.toml")

	t.Run("keys", func(t *testing.T) {
		doc := "[protocol]\nstate_key_file = \"good.key\"\nstate_ttl = \"30s\"\nmax_input_rounds = 3\n"
		cfg, err := ParseEnv(cfgPath, []byte(doc), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		want := Protocol{StateKey: []byte(key), StateTTL: 30 * time.Second, MaxInputRounds: 3}
		if diff := cmp.Diff(want, cfg.Protocol); diff != "" {
			t.Errorf("Protocol (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{key}, cfg.Secrets); diff != "" {
			t.Errorf("the key is not a secret to redact (-want +got):\n%s", diff)
		}
	})

	tests := []struct {
		name, doc, want string
	}{
		{"open key file", "[protocol]\nstate_key_file = " + tomlQuote(open) + "\n",
			"proxy.toml:2:1: protocol.state_key_file: " + open + " is readable or writable by other users (mode 0644); it authenticates the requestState clients hand back, so restrict it: chmod 600 " + open},
		{"short key", "[protocol]\nstate_key_file = " + tomlQuote(short) + "\n",
			"proxy.toml:2:1: protocol.state_key_file: " + short + " holds 3 bytes; a state key needs at least 32: write one with openssl rand -hex 32 > " + short},
		{"rounds out of range", "[protocol]\nmax_input_rounds = 0\n",
			"proxy.toml:2:1: protocol.max_input_rounds: 0 is out of range; use a number of rounds between 1 and 100, like 10"},
		{"unknown key", "[protocol]\nmax_input_round = 3\n",
			`proxy.toml:2:1: protocol.max_input_round: unknown key; did you mean "max_input_rounds"?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEnv("proxy.toml", []byte(tt.doc), env(nil))
			if diff := cmp.Diff([]string{tt.want}, problems(t, err)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func tomlQuote(s string) string { return `"` + strings.ReplaceAll(s, `\`, `\\`) + `"` }
