//lint:file-ignore SA1019 MCP logging is deprecated as of protocol 2026-07-28, but Manifold serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol: an upstream's log message is one of the channels a secret may leak through.

package proxy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/internal/redact"
	"github.com/manifold-mcp/manifold/upstream"
)

// Secrets of the masking tests: one plain, one that every quoting changes.
const (
	maskPlain = "plainS3cr3t-value-42"
	maskOdd   = `oddS3cr3t"/ü\value`
)

// leakyServer is an in-memory upstream that echoes secrets everywhere it
// can: tool text, structured content, an isError result, a JSON-RPC error,
// a log message and a progress message during a call, a resource, a prompt,
// a tool description.
//
// With how = "notify" the call sends its notifications and then waits for
// release (at most 20s): a progress notification that arrives after its
// call has ended is dropped, so the test lets the call end only once it has
// seen them.
func leakyServer(t testing.TB, release <-chan struct{}) func(context.Context) (mcp.Transport, error) {
	both := maskPlain + " and " + maskOdd
	srv := mcp.NewServer(&mcp.Implementation{Name: "leaky", Version: "0"}, nil)
	srv.AddTool(&mcp.Tool{Name: "leak", Description: "leaks " + maskPlain, InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct {
				How string `json:"how"`
			}
			_ = json.Unmarshal(req.Params.Arguments, &in)
			switch in.How {
			case "rpc":
				data, _ := json.Marshal(map[string]string{"token": maskOdd})
				return nil, &jsonrpc.Error{Code: -32001, Message: "failed with " + both, Data: data}
			case "error":
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad token " + both}}}, nil
			case "notify":
				_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "error", Data: map[string]any{"msg": "auth " + both}})
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "using " + both})
				}
				select {
				case <-release:
				case <-time.After(20 * time.Second):
				}
			}
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "env TOKEN=" + both}},
				StructuredContent: map[string]any{"env": map[string]any{"TOKEN": maskOdd}, "n": 1},
			}, nil
		})
	srv.AddResource(&mcp.Resource{URI: "leak://r", Name: "r"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "leak://r", Text: "config: " + both}}}, nil
	})
	srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "use " + both}}}}, nil
	})
	return inMemoryDial(t, srv)
}

// linesUntil sends req (unless "") and returns every output line up to and including
// the answer with id.
func (rs *rawSession) linesUntil(req, id string) []string {
	rs.t.Helper()
	if req != "" {
		rs.send(req)
	}
	var out []string
	for {
		l := rs.rawLine()
		out = append(out, string(l))
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(l, &m) == nil && string(m.ID) == id {
			return out
		}
	}
}

// TestUpstreamEchoMasked: a secret of the config that an upstream echoes
// reaches the client as [redacted], in every channel: tool results (text,
// structured content, isError), JSON-RPC errors (message and data), log and
// progress notifications, resource reads, prompts and tool lists, on the
// stdio lean path and the SDK path alike.
func TestUpstreamEchoMasked(t *testing.T) {
	release := make(chan struct{})
	s := startedServer(t, Options{
		Redactor: redact.New(maskPlain, maskOdd),
		Servers:  []ServerConfig{{Upstream: upstream.Options{Name: "leaky", Dial: leakyServer(t, release)}, Prefix: "leaky"}},
	})
	rs := openRaw(t, s)
	rs.linesUntil(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"debug"}}`, "1")
	tests := []struct {
		name, req string
		want      []string // in the output, each
	}{
		{"text and structured", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"leaky__leak","arguments":{}}}`,
			[]string{`env TOKEN=[redacted] and [redacted]`, `"TOKEN":"[redacted]"`}},
		{"isError", `{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"leaky__leak","arguments":{"how":"error"}}}`,
			[]string{`bad token [redacted] and [redacted]`}},
		{"rpc error", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"leaky__leak","arguments":{"how":"rpc"}}}`,
			[]string{`failed with [redacted] and [redacted]`, `"token":"[redacted]"`}},
		{"log and progress", `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"leaky__leak","arguments":{"how":"notify"},"_meta":{"progressToken":"p1"}}}`,
			[]string{`auth [redacted] and [redacted]`, `using [redacted] and [redacted]`}},
		{"resource", `{"jsonrpc":"2.0","id":14,"method":"resources/read","params":{"uri":"leaky+leak://r"}}`,
			[]string{`config: [redacted] and [redacted]`}},
		{"prompt", `{"jsonrpc":"2.0","id":15,"method":"prompts/get","params":{"name":"leaky__p"}}`,
			[]string{`use [redacted] and [redacted]`}},
		{"tool list", `{"jsonrpc":"2.0","id":16,"method":"tools/list"}`,
			[]string{`leaks [redacted]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs.t = t
			var id struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal([]byte(tt.req), &id); err != nil {
				t.Fatal(err)
			}
			var out string
			if strings.Contains(tt.req, `"notify"`) {
				// Both notifications, then the call may end.
				rs.send(tt.req)
				for range 2 {
					out += string(rs.rawLine())
				}
				close(release)
				out += strings.Join(rs.linesUntil("", string(id.ID)), "")
			} else {
				out = strings.Join(rs.linesUntil(tt.req, string(id.ID)), "")
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %s:\n%s", w, out)
				}
			}
			assertMasked(t, out)
		})
	}
}

// assertMasked fails when out holds one of the masking tests' secrets in
// any spelling.
func assertMasked(t *testing.T, out string) {
	t.Helper()
	for _, secret := range []string{maskPlain, maskOdd} {
		for _, f := range append(redact.Forms(secret), "oddS3cr3t", `\u00fc\\value`) {
			if strings.Contains(out, f) {
				t.Errorf("output shows %q (a spelling of %q):\n%s", f, secret, out)
				break
			}
		}
	}
}
