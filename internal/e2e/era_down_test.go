package e2e

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Issue 11, the downstream face: go-sdk clients of both eras against the
// built binary, over stdio and HTTP.

const modernVersion = "2026-07-28"

// eraDownCases are the two eras a client may speak, and whether its session
// must come out modern.
var eraDownCases = []struct {
	name, version string
	modern        bool
}{
	{"2026-07-28 (server/discover)", modernVersion, true},
	{"2025-11-25 (initialize)", "2025-11-25", false},
}

// checkEraSession lists and calls through cs, and checks that the session
// speaks the era it asked for.
func checkEraSession(t *testing.T, cs *mcp.ClientSession, modern bool) {
	t.Helper()
	ctx := testCtx(t)
	ir := cs.InitializeResult()
	if got := ir.ProtocolVersion >= modernVersion; got != modern {
		t.Fatalf("negotiated %q; want modern = %v", ir.ProtocolVersion, modern)
	}
	if ir.ServerInfo == nil || ir.ServerInfo.Name != "manifold" {
		t.Errorf("serverInfo = %+v, want manifold", ir.ServerInfo)
	}
	tools := listTools(ctx, t, cs)
	for _, server := range []string{"alpha", "beta"} {
		name := server + "__echo"
		if tools[name] == nil {
			t.Errorf("%s not listed; listed: %v", name, toolNames(tools))
			continue
		}
		if got, want := text(call(ctx, t, cs, name, map[string]any{"message": "era"})), server+": era"; got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if modern && (res.TTLMs <= 0 || res.CacheScope != "public") {
		t.Errorf("modern tools/list: ttlMs %d, cacheScope %q; want a positive TTL, public", res.TTLMs, res.CacheScope)
	}
	if !modern && (res.TTLMs != 0 || res.CacheScope != "public") {
		t.Errorf("legacy tools/list: ttlMs %d, cacheScope %q; want 0 and public, as before", res.TTLMs, res.CacheScope)
	}
}

func TestEraDownStdio(t *testing.T) {
	t.Parallel()
	for _, tc := range eraDownCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := mcp.NewClient(&mcp.Implementation{Name: "e2e-era", Version: "0"}, nil)
			sp := startStdioClient(t, writeConfig(t, twoFixtures()), client, tc.version)
			checkEraSession(t, sp.cs, tc.modern)
		})
	}
}
