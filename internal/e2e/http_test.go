package e2e

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

func TestHTTP(t *testing.T) {
	t.Parallel()
	hp := startHTTP(t, writeConfig(t, twoFixtures()))
	ctx := testCtx(t)

	t.Run("list and call both servers", func(t *testing.T) {
		cs := connectHTTP(t, hp)
		tools := listTools(ctx, t, cs)
		for _, server := range []string{"alpha", "beta"} {
			if tools[server+"__echo"] == nil {
				t.Errorf("%s__echo not listed over HTTP; listed: %v", server, toolNames(tools))
				continue
			}
			if got, want := text(call(ctx, t, cs, server+"__echo", map[string]any{"message": "over http"})), server+": over http"; got != want {
				t.Errorf("%s__echo over HTTP = %q, want %q", server, got, want)
			}
		}
	})

	t.Run("DNS rebinding protection", func(t *testing.T) {
		const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`
		tests := []struct {
			name       string
			host       string // "" = the listener's address
			origin     string // "" = no Origin header
			wantStatus int
		}{
			{name: "foreign Host", host: "evil.example", wantStatus: http.StatusForbidden},
			{name: "foreign Host with port", host: "evil.example:80", wantStatus: http.StatusForbidden},
			{name: "foreign Origin", origin: "http://evil.example", wantStatus: http.StatusForbidden},
			{name: "loopback Origin", origin: "http://localhost:1234", wantStatus: http.StatusOK},
			{name: "localhost Host", host: "localhost", wantStatus: http.StatusOK},
			{name: "no Origin", wantStatus: http.StatusOK},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, hp.endpoint(), strings.NewReader(initialize))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if tt.host != "" {
					req.Host = tt.host
				}
				if tt.origin != "" {
					req.Header.Set("Origin", tt.origin)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("status %d, want %d; body: %s", resp.StatusCode, tt.wantStatus, body)
				}
				if tt.wantStatus == http.StatusOK && !strings.Contains(string(body), `"serverInfo"`) {
					t.Errorf("accepted initialize answered %q, want an initialize result", body)
				}
				if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
					del, err := http.NewRequestWithContext(ctx, http.MethodDelete, hp.endpoint(), nil)
					if err != nil {
						t.Fatal(err)
					}
					del.Header.Set("Mcp-Session-Id", id)
					if resp, err := http.DefaultClient.Do(del); err == nil {
						resp.Body.Close()
					}
				}
			})
		}
	})
}
