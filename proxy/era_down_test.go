package proxy

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/upstream"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// eraUpstream is an in-memory upstream whose tools carry schemas of older
// JSON Schema drafts, an output schema, and a resource, a template and a
// prompt, so that the era translation of every list has something to do.
func eraUpstream(t testing.TB) func(ctx context.Context) (mcp.Transport, error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "era", Version: "0"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	srv.AddTool(&mcp.Tool{Name: "draft7", Title: "Draft 7", InputSchema: map[string]any{
		"$schema":     "http://json-schema.org/draft-07/schema#",
		"type":        "object",
		"definitions": map[string]any{"n": map[string]any{"type": "integer", "minimum": 0, "exclusiveMinimum": true}},
		"properties": map[string]any{
			"n":    map[string]any{"$ref": "#/definitions/n"},
			"pair": map[string]any{"type": "array", "items": []any{map[string]any{"type": "string"}, map[string]any{"type": "number"}}, "additionalItems": false},
		},
		"dependencies": map[string]any{"n": []any{"pair"}},
	}, OutputSchema: map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "plain", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "plain"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "hidden", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hidden"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	srv.AddResource(&mcp.Resource{URI: "era://doc/a", Name: "a"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "era://doc/a", Text: "a"}}}, nil
	})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "era://doc/{x}", Name: "t"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "t"}}}, nil
	})
	return func(ctx context.Context) (mcp.Transport, error) {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(context.Background(), st, nil)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { _ = ss.Close() })
		return ct, nil
	}
}

// newEraServer starts a proxy in front of eraUpstream (prefix "era"), with a
// rule that hides era__hidden.
func newEraServer(t testing.TB, opts Options) *Server {
	t.Helper()
	opts.Policy = &policy.Rules{Servers: map[string]*policy.ServerRules{
		"era": {Tools: policy.List{Deny: []policy.Pattern{{Glob: "hidden", Source: "test"}}}},
	}}
	opts.Servers = []ServerConfig{{Upstream: upstream.Options{Name: "era", Dial: eraUpstream(t)}, Prefix: "era"}}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-s.Ready()
	return s
}

// rawLine reads the next output line of rs.
func (rs *rawSession) rawLine() []byte {
	rs.t.Helper()
	select {
	case l, ok := <-rs.lines:
		if !ok {
			rs.fail("the proxy closed stdout")
		}
		return l
	case <-time.After(20 * time.Second):
		rs.fail("no output line within 20s")
	}
	return nil
}

// legacyListRequests are the requests whose answers a legacy client must see
// byte for byte as before the proxy spoke 2026-07-28.
var legacyListRequests = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`,
	`{"jsonrpc":"2.0","id":3,"method":"resources/list"}`,
	`{"jsonrpc":"2.0","id":4,"method":"resources/templates/list"}`,
	`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"era+era://doc/a"}}`,
	`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"era+era://doc/none"}}`,
	`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"era__plain","arguments":{}}}`,
	`{"jsonrpc":"2.0","id":8,"method":"server/discover","params":{}}`,
	`{"jsonrpc":"2.0","id":9,"method":"ping"}`,
}

// TestLegacyBytesUnchanged: a client of every legacy version gets, for every
// list, read, call and error, the bytes it got before the downstream face
// became dual-era (testdata/legacy_lists.golden was written on main before the
// change; -update rewrites it).
func TestLegacyBytesUnchanged(t *testing.T) {
	s := newEraServer(t, Options{})
	var got bytes.Buffer
	for _, v := range []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		rs := openRawVersion(t, s, v)
		got.WriteString("# " + v + "\n")
		for _, req := range legacyListRequests {
			rs.send(req)
			got.Write(rs.rawLine())
		}
	}
	path := filepath.Join("testdata", "legacy_lists.golden")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got.String(), "\n")); diff != "" {
		t.Errorf("legacy answers changed (-golden +now):\n%s", diff)
	}
}

