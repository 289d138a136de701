package e2e

import (
	"testing"
)

// TestServeHTTPListenFromConfig: `manifold serve --http` without an
// address listens on the config's [http] listen, whether --http comes last
// or before another flag.
func TestServeHTTPListenFromConfig(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args func(cfg string) []string
	}{
		{"last", func(cfg string) []string { return []string{"serve", "--config", cfg, "--http"} }},
		{"before a flag", func(cfg string) []string { return []string{"serve", "--http", "--config", cfg} }},
		{"before the config file", func(cfg string) []string { return []string{"serve", "--http", cfg} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hp *httpProxy
			var lastErr string
			for range 3 { // another process may take the port between probe and bind
				addr := freePort(t)
				cfg := writeConfig(t, "[http]\nlisten = "+tomlStr(addr)+"\n"+fixture("alpha", nil))
				if hp, lastErr = launchHTTP(t, addr, tt.args(cfg)...); hp != nil {
					break
				}
			}
			if hp == nil {
				t.Fatalf("manifold serve --http did not start:\n%s", lastErr)
			}
			cs := connectHTTP(t, hp)
			if tools := listTools(testCtx(t), t, cs); tools["alpha__echo"] == nil {
				t.Errorf("tools %v: want alpha__echo", toolNames(tools))
			}
		})
	}
}
