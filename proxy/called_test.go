package proxy

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
)

// TestCalledAtFirstCall: Called is open through the start and the client's
// opening (initialize, tools/list), and closed by its first tools/call.
func TestCalledAtFirstCall(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	s := startedServer(t, Options{Servers: []ServerConfig{{Upstream: upstream.Options{Name: "up", Dial: inMemoryDial(t, srv)}, Prefix: "u"}}})
	cs := connectClient(t, s, nil)
	if _, err := cs.ListTools(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Called():
		t.Fatal("Called is closed before any tools/call")
	default:
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "u__t"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Called():
	case <-time.After(10 * time.Second):
		t.Fatal("Called is not closed after a tools/call")
	}
}
