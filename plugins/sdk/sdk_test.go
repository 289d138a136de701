package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/plugins"
)

type addIn struct {
	A int `json:"a"`
	B int `json:"b,omitempty" jsonschema:"defaults to 10"`
}

type addOut struct {
	Sum int `json:"sum"`
}

func newTestPlugin(t *testing.T) *Plugin {
	t.Helper()
	p := New()
	p.log = slog.New(slog.DiscardHandler)
	addTool := &mcp.Tool{Name: "add", Description: "Add two numbers."}
	addTool.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer","default":10}},"required":["a"]}`)
	AddTool(p, addTool, func(_ context.Context, in addIn) (*mcp.CallToolResult, addOut, error) {
		if in.A < 0 {
			return nil, addOut{}, errors.New("a must not be negative")
		}
		return nil, addOut{Sum: in.A + in.B}, nil
	})
	AddTool(p, &mcp.Tool{Name: "derived"}, func(_ context.Context, in addIn) (*mcp.CallToolResult, addOut, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "custom"}}}, addOut{Sum: in.A}, nil
	})
	AddTool(p, &mcp.Tool{Name: "bad_output", OutputSchema: map[string]any{"type": "object", "required": []string{"missing"}}},
		func(context.Context, struct{}) (*mcp.CallToolResult, addOut, error) {
			return nil, addOut{}, nil
		})
	p.AddTool(&mcp.Tool{Name: "raw"}, func(_ context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(args)}}}, nil
	})
	p.AddTool(&mcp.Tool{Name: "nil_result"}, func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
		return nil, nil
	})
	p.AddTool(&mcp.Tool{Name: "boom"}, func(context.Context, json.RawMessage) (*mcp.CallToolResult, error) {
		panic("boom")
	})
	return p
}

func TestListTools(t *testing.T) {
	p := newTestPlugin(t)
	tools, err := p.ListTools(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, tool := range tools {
		got[tool.Name] = string(tool.InputSchema) + " -> " + string(tool.OutputSchema)
	}
	want := map[string]string{
		"add":        `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer","default":10}},"required":["a"]} -> {"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"],"additionalProperties":false}`,
		"derived":    `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer","description":"defaults to 10"}},"required":["a"],"additionalProperties":false} -> {"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"],"additionalProperties":false}`,
		"bad_output": `{"type":"object","additionalProperties":false} -> {"type":"object","required":["missing"]}`,
		"raw":        `{"type":"object"} -> `,
		"nil_result": `{"type":"object"} -> `,
		"boom":       `{"type":"object"} -> `,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
}

func TestCallTool(t *testing.T) {
	p := newTestPlugin(t)
	tests := []struct {
		name string
		req  plugins.CallRequest
		want string // the result as JSON
	}{
		{
			name: "typed tool with a default applied",
			req:  plugins.CallRequest{Name: "add", Arguments: json.RawMessage(`{"a":1}`)},
			want: `{"content":[{"type":"text","text":"{\"sum\":11}"}],"structuredContent":{"sum":11}}`,
		},
		{
			name: "typed tool keeps its own content",
			req:  plugins.CallRequest{Name: "derived", Arguments: json.RawMessage(`{"a":4}`)},
			want: `{"content":[{"type":"text","text":"custom"}],"structuredContent":{"sum":4}}`,
		},
		{
			name: "invalid arguments",
			req:  plugins.CallRequest{Name: "add", Arguments: json.RawMessage(`{"a":"one"}`)},
			want: `{"content":[{"type":"text","text":"invalid arguments: validating root: validating /properties/a: type: one has type \"string\", want \"integer\""}],"isError":true}`,
		},
		{
			name: "arguments that are not an object",
			req:  plugins.CallRequest{Name: "add", Arguments: json.RawMessage(`[1]`)},
			want: `{"content":[{"type":"text","text":"invalid arguments: want a JSON object: json: cannot unmarshal array into Go value of type map[string]interface {}"}],"isError":true}`,
		},
		{
			name: "handler error",
			req:  plugins.CallRequest{Name: "add", Arguments: json.RawMessage(`{"a":-1}`)},
			want: `{"content":[{"type":"text","text":"a must not be negative"}],"isError":true}`,
		},
		{
			name: "output that does not match the output schema",
			req:  plugins.CallRequest{Name: "bad_output"},
			want: `{"content":[{"type":"text","text":"the output does not match the tool's output schema: validating root: required: missing properties: [\"missing\"]"}],"isError":true}`,
		},
		{
			name: "raw tool",
			req:  plugins.CallRequest{Name: "raw", Arguments: json.RawMessage(`{"any":true}`)},
			want: `{"content":[{"type":"text","text":"{\"any\":true}"}]}`,
		},
		{
			name: "nil result is an empty one",
			req:  plugins.CallRequest{Name: "nil_result"},
			want: `{"content":[]}`,
		},
		{
			name: "panic",
			req:  plugins.CallRequest{Name: "boom"},
			want: `{"content":[{"type":"text","text":"tool \"boom\" failed: it panicked: boom"}],"isError":true}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := p.CallTool(t.Context(), tt.req)
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}

	if _, err := p.CallTool(t.Context(), plugins.CallRequest{Name: "nope"}); err == nil || err.Error() != `unknown tool "nope"` {
		t.Errorf("CallTool of an unknown tool: err = %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	p.AddTool(&mcp.Tool{Name: "ctx"}, func(ctx context.Context, _ json.RawMessage) (*mcp.CallToolResult, error) {
		return nil, ctx.Err()
	})
	if _, err := p.CallTool(ctx, plugins.CallRequest{Name: "ctx"}); !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool with a cancelled ctx: err = %v, want context.Canceled", err)
	}
}

func TestAddToolPanics(t *testing.T) {
	tests := []struct {
		name string
		add  func(p *Plugin)
		want string
	}{
		{"no name", func(p *Plugin) { p.AddTool(&mcp.Tool{}, nil) }, "sdk.AddTool: tool without a name"},
		{"twice", func(p *Plugin) {
			p.AddTool(&mcp.Tool{Name: "x"}, nil)
			p.AddTool(&mcp.Tool{Name: "x"}, nil)
		}, `sdk.AddTool: tool "x" added twice`},
		{"invalid raw schema", func(p *Plugin) {
			p.AddTool(&mcp.Tool{Name: "x", InputSchema: json.RawMessage(`{`)}, nil)
		}, `sdk.AddTool "x": input schema: not valid JSON`},
		{"schema that cannot be derived", func(p *Plugin) {
			AddTool(p, &mcp.Tool{Name: "x"}, func(context.Context, chan int) (*mcp.CallToolResult, any, error) { return nil, nil, nil })
		}, `sdk.AddTool "x": input schema: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				v := recover()
				if s, _ := v.(string); !strings.HasPrefix(s, tt.want) {
					t.Errorf("panic = %v, want it to start with %q", v, tt.want)
				}
			}()
			tt.add(New())
		})
	}
}

// TestLoggerFormat checks that Logger's records are in the JSON shape that
// go-plugin's host parses: "@level" in lower case, "@message", no time.
func TestLoggerFormat(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug - 4, ReplaceAttr: hclogKeys}))
	log.Debug("d", "k", 1)
	log.Info("i", slog.Group("g", "level", "x"))
	log.Warn("w")
	log.Error("e")
	log.Log(t.Context(), slog.LevelDebug-4, "t")
	want := `{"@level":"debug","@message":"d","k":1}
{"@level":"info","@message":"i","g":{"level":"x"}}
{"@level":"warn","@message":"w"}
{"@level":"error","@message":"e"}
{"@level":"trace","@message":"t"}
`
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}
