package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Helpers shared by the tests that talk MCP through the go-sdk client.

// listTools lists every tool, draining pagination, by exposed name.
func listTools(ctx context.Context, t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	out := make(map[string]*mcp.Tool)
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		if _, dup := out[tool.Name]; dup {
			t.Errorf("tools/list: %q listed twice", tool.Name)
		}
		out[tool.Name] = tool
	}
	return out
}

// toolNames returns the sorted names of tools.
func toolNames(tools map[string]*mcp.Tool) []string {
	names := make([]string, 0, len(tools))
	for n := range tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// findTool returns the name of the tool with the given prefix and
// description, or "" if none.
func findTool(tools map[string]*mcp.Tool, prefix, description string) string {
	for _, n := range toolNames(tools) {
		if strings.HasPrefix(n, prefix) && tools[n].Description == description {
			return n
		}
	}
	return ""
}

// call calls a tool and fails the test on a protocol error.
func call(ctx context.Context, t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return res
}

// texts returns the text of every text content, and "<type>" for others.
func texts(cs []mcp.Content) []string {
	out := []string{}
	for _, c := range cs {
		switch c := c.(type) {
		case *mcp.TextContent:
			out = append(out, c.Text)
		case *mcp.ResourceLink:
			out = append(out, "<resource_link>")
		case *mcp.EmbeddedResource:
			out = append(out, "<resource>")
		default:
			out = append(out, "<other>")
		}
	}
	return out
}

// text joins the texts of a result.
func text(res *mcp.CallToolResult) string { return strings.Join(texts(res.Content), "\n") }

// asJSON re-decodes v through JSON, so values of different Go types compare.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
