// Package sdk is for writing Manifold plugins: programs that serve local tools
// to the proxy. A plugin is a main of a few lines that registers its tools on
// a [Plugin] and calls [Plugin.Serve]:
//
//	func main() {
//		p := sdk.New()
//		sdk.AddTool(p, &mcp.Tool{Name: "greet", Description: "Say hello."}, greet)
//		p.Serve()
//	}
//
//	type greetIn struct {
//		Name string `json:"name" jsonschema:"who to greet"`
//	}
//
//	type greetOut struct {
//		Greeting string `json:"greeting"`
//	}
//
//	func greet(ctx context.Context, in greetIn) (*mcp.CallToolResult, greetOut, error) {
//		return nil, greetOut{Greeting: "Hello, " + in.Name}, nil
//	}
//
// A tool is a Go function plus its schema ([Plugin.AddTool]), or a typed Go
// function whose input and output schemas are derived from its types
// ([AddTool]). Results are MCP content: text, images, structured content,
// and isError for failures the model should see.
//
// A plugin must not write to stdout before Serve (the handshake travels
// there) and should log with [Plugin.Logger], which writes to stderr in the
// format the host re-logs under the plugin's name. It must not read stdin:
// the host gives it none. It exits when the host is gone.
package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/plugins"
)

// Handler runs a tool. args is the JSON object of arguments as the client
// sent it, not validated (nil when there are none). A returned error becomes
// an isError result carrying its text; so does a panic.
type Handler func(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error)

// TypedHandler runs a tool whose arguments are decoded into In, after they
// were validated against the input schema and its defaults applied. Out
// becomes the result's structured content (and, when the result has no
// content, its text as JSON); the returned result may be nil. A returned
// error becomes an isError result carrying its text.
type TypedHandler[In, Out any] func(ctx context.Context, in In) (*mcp.CallToolResult, Out, error)

// Plugin is a set of tools served to a Manifold host. Register every tool
// before calling Serve. It implements plugins.LocalTools, so tests can call
// its tools in-process through ListTools and CallTool.
type Plugin struct {
	tools    []plugins.Tool
	handlers map[string]Handler
	log      *slog.Logger
}

var _ plugins.LocalTools = (*Plugin)(nil)

// New returns a Plugin without tools.
func New() *Plugin {
	return &Plugin{
		handlers: make(map[string]Handler),
		log:      slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: hclogKeys})),
	}
}

// Logger returns a logger whose records the host logs, tagged with the
// plugin's name, at their level.
func (p *Plugin) Logger() *slog.Logger { return p.log }

// AddTool registers a tool. t.InputSchema is its JSON Schema, a value that
// marshals to a JSON object (a map, a *jsonschema.Schema, a json.RawMessage);
// if nil, the tool takes an object with any properties. It panics if the
// name is empty or taken, or a schema does not marshal.
func (p *Plugin) AddTool(t *mcp.Tool, h Handler) {
	if t.Name == "" {
		panic("sdk.AddTool: tool without a name")
	}
	if _, dup := p.handlers[t.Name]; dup {
		panic(fmt.Sprintf("sdk.AddTool: tool %q added twice", t.Name))
	}
	wt := plugins.Tool{Name: t.Name, Title: t.Title, Description: t.Description, Annotations: t.Annotations}
	var err error
	if wt.InputSchema, err = marshalSchema(t.InputSchema); err != nil {
		panic(fmt.Sprintf("sdk.AddTool %q: input schema: %v", t.Name, err))
	}
	if wt.OutputSchema, err = marshalSchema(t.OutputSchema); err != nil {
		panic(fmt.Sprintf("sdk.AddTool %q: output schema: %v", t.Name, err))
	}
	if wt.InputSchema == nil {
		wt.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	p.tools = append(p.tools, wt)
	p.handlers[t.Name] = h
}

// AddTool registers a tool implemented by a typed function. When
// t.InputSchema is nil it is derived from In, and when t.OutputSchema is nil
// and Out is not any, from Out (see github.com/google/jsonschema-go: field
// names follow json tags, descriptions come from jsonschema tags). It panics
// like [Plugin.AddTool], or if a schema cannot be derived or resolved.
func AddTool[In, Out any](p *Plugin, t *mcp.Tool, h TypedHandler[In, Out]) {
	tt := *t
	var err error
	var in *jsonschema.Resolved
	if reflect.TypeFor[In]() == reflect.TypeFor[any]() && t.InputSchema == nil {
		tt.InputSchema = &jsonschema.Schema{Type: "object"}
	}
	if tt.InputSchema, in, err = schemaFor[In](tt.InputSchema); err != nil {
		panic(fmt.Sprintf("sdk.AddTool %q: input schema: %v", t.Name, err))
	}
	var out *jsonschema.Resolved
	if t.OutputSchema != nil || reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		if tt.OutputSchema, out, err = schemaFor[Out](t.OutputSchema); err != nil {
			panic(fmt.Sprintf("sdk.AddTool %q: output schema: %v", t.Name, err))
		}
	}
	p.AddTool(&tt, func(ctx context.Context, args json.RawMessage) (*mcp.CallToolResult, error) {
		v, err := decodeArgs[In](args, in)
		if err != nil {
			return nil, err
		}
		res, o, err := h(ctx, v)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		if out == nil {
			return res, nil
		}
		b, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("encoding the output: %w", err)
		}
		var check any
		if err := json.Unmarshal(b, &check); err != nil {
			return nil, fmt.Errorf("encoding the output: %w", err)
		}
		if err := out.Validate(check); err != nil {
			return nil, fmt.Errorf("the output does not match the tool's output schema: %w", err)
		}
		res.StructuredContent = json.RawMessage(b)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
		}
		return res, nil
	})
}

// decodeArgs validates args against the resolved schema, applies its
// defaults and decodes them into an In.
func decodeArgs[In any](args json.RawMessage, schema *jsonschema.Resolved) (In, error) {
	var v In
	obj := map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &obj); err != nil {
			return v, fmt.Errorf("invalid arguments: want a JSON object: %w", err)
		}
	}
	if err := schema.ApplyDefaults(&obj); err != nil {
		return v, fmt.Errorf("invalid arguments: %w", err)
	}
	if err := schema.Validate(obj); err != nil {
		return v, fmt.Errorf("invalid arguments: %w", err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return v, fmt.Errorf("invalid arguments: %w", err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("invalid arguments: %w", err)
	}
	return v, nil
}

// schemaFor returns the schema given (as a *jsonschema.Schema), or the one
// derived from T when given is nil, and its resolved form.
func schemaFor[T any](given any) (*jsonschema.Schema, *jsonschema.Resolved, error) {
	var s *jsonschema.Schema
	switch g := given.(type) {
	case nil:
		rt := reflect.TypeFor[T]()
		if rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		var err error
		if s, err = jsonschema.ForType(rt, &jsonschema.ForOptions{}); err != nil {
			return nil, nil, err
		}
	case *jsonschema.Schema:
		s = g
	default:
		b, err := json.Marshal(g)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, nil, err
		}
	}
	r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		return nil, nil, err
	}
	return s, r, nil
}

// marshalSchema returns a schema as JSON; nil stays nil.
func marshalSchema(s any) (json.RawMessage, error) {
	if s == nil {
		return nil, nil
	}
	if raw, ok := s.(json.RawMessage); ok {
		if !json.Valid(raw) {
			return nil, fmt.Errorf("not valid JSON")
		}
		return raw, nil
	}
	return json.Marshal(s)
}

// ListTools implements plugins.LocalTools.
func (p *Plugin) ListTools(context.Context) ([]plugins.Tool, error) {
	return p.tools, nil
}

// CallTool implements plugins.LocalTools: it runs the tool, turning an error
// or a panic into an isError result. When ctx is cancelled it returns
// ctx.Err(), which the host does not forward.
func (p *Plugin) CallTool(ctx context.Context, req plugins.CallRequest) (res *mcp.CallToolResult, err error) {
	h, ok := p.handlers[req.Name]
	if !ok {
		return nil, fmt.Errorf("unknown tool %q", req.Name)
	}
	defer func() {
		if v := recover(); v != nil {
			p.log.Error("tool panicked", "tool", req.Name, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			res, err = &mcp.CallToolResult{}, nil
			res.SetError(fmt.Errorf("tool %q failed: it panicked: %v", req.Name, v))
		}
	}()
	res, err = h(ctx, req.Arguments)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		res = &mcp.CallToolResult{}
		res.SetError(err)
		return res, nil
	}
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	if res.Content == nil {
		res.Content = []mcp.Content{}
	}
	return res, nil
}

// Serve serves the tools to the Manifold host that started the program, and
// exits when the host stops the plugin or is gone. It never returns. Run
// directly, outside a host, it prints that it is a plugin and exits with
// status 1.
func (p *Plugin) Serve() {
	go watchParent(time.Second, func() {
		p.log.Warn("the host is gone; exiting")
		os.Exit(1)
	})
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugins.Handshake,
		VersionedPlugins: map[int]plugin.PluginSet{
			plugins.ContractVersion: {plugins.PluginName: &plugins.GRPCPlugin{Impl: p}},
		},
		GRPCServer: plugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:       "sdk",
			Output:     os.Stderr,
			JSONFormat: true,
			Level:      hclog.Info,
		}),
	})
	os.Exit(0)
}

// watchParent calls exit when the process's parent changes: the host died
// and the plugin was handed to another process. It polls every interval, and
// returns only after calling exit.
func watchParent(interval time.Duration, exit func()) {
	ppid := os.Getppid()
	t := time.NewTicker(interval)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != ppid {
			exit()
			return
		}
	}
}

// hclogKeys writes slog's JSON records the way hclog does, so that the host
// parses them: "@message", "@level" in lower case, and no time (the host
// stamps its own).
func hclogKeys(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		return slog.Attr{}
	case slog.MessageKey:
		a.Key = "@message"
	case slog.LevelKey:
		a.Key = "@level"
		lvl, _ := a.Value.Any().(slog.Level)
		switch {
		case lvl < slog.LevelDebug:
			a.Value = slog.StringValue("trace")
		case lvl < slog.LevelInfo:
			a.Value = slog.StringValue("debug")
		case lvl < slog.LevelWarn:
			a.Value = slog.StringValue("info")
		case lvl < slog.LevelError:
			a.Value = slog.StringValue("warn")
		default:
			a.Value = slog.StringValue("error")
		}
	}
	return a
}
