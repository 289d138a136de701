package plugins

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/go-plugin"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
)

// ContractVersion is the version of the host-plugin contract this package
// speaks. It is go-plugin's protocol version: a plugin built against another
// version is refused at the handshake with a message that says to rebuild it.
const ContractVersion = 1

// PluginName is the name under which a plugin serves its [LocalTools].
const PluginName = "tools"

// Handshake is the go-plugin handshake shared by the host and every plugin.
// The magic cookie only tells a plugin binary that a Manifold host started
// it; it carries no version, so that a plugin of another contract version
// gets past it and is told about the version instead.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ContractVersion,
	MagicCookieKey:   "MANIFOLD_PLUGIN",
	MagicCookieValue: "manifold-local-tools",
}

// Tool describes one tool of a plugin. The fields mean what they mean in
// MCP's Tool: the host exposes them unchanged, except that an input or output
// schema without "type" gets "type": "object".
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the tool's arguments, an object schema.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema, if set, is the JSON Schema of the result's structured
	// content, an object schema.
	OutputSchema json.RawMessage      `json:"outputSchema,omitempty"`
	Annotations  *mcp.ToolAnnotations `json:"annotations,omitempty"`
}

// CallRequest is one tools/call.
type CallRequest struct {
	Name string `json:"name"`
	// Arguments is the JSON object of arguments, as the client sent it
	// (unvalidated); nil when the client sent none.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// LocalTools is the contract between the host and a plugin. A plugin
// implements it (plugins/sdk does it for plugin authors); the host calls it
// over gRPC. Both methods honour ctx: when the client cancels a call, ctx is
// cancelled in the plugin.
type LocalTools interface {
	// ListTools describes the plugin's tools. The host asks once per start.
	ListTools(ctx context.Context) ([]Tool, error)
	// CallTool runs one tool. A failure the model can act on is a result
	// with IsError set; an error is for calls that could not run at all
	// (unknown tool), and reaches the model as an isError result too.
	CallTool(ctx context.Context, req CallRequest) (*mcp.CallToolResult, error)
}

// GRPCPlugin serves (Impl set, in a plugin) or dispenses (in the host) a
// [LocalTools] over go-plugin's gRPC transport. The messages are JSON, through
// a codec chosen per call: there is no protobuf and no generated code, and
// go-plugin's own services keep their protobuf codec.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Impl is the plugin's implementation; nil in the host.
	Impl LocalTools
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers Impl on the plugin's gRPC server.
func (p *GRPCPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&serviceDesc, p.Impl)
	return nil
}

// GRPCClient returns the host's [LocalTools] client on conn.
func (*GRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &grpcClient{conn: conn}, nil
}

// The wire messages. Each is a JSON object so that fields can be added
// without a new contract version.
type (
	listToolsRequest  struct{}
	listToolsResponse struct {
		Tools []Tool `json:"tools"`
	}
	callToolResponse struct {
		Result *mcp.CallToolResult `json:"result"`
	}
)

const serviceName = "manifold.plugins.v1.LocalTools"

var serviceDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*LocalTools)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "ListTools", Handler: listToolsHandler},
		{MethodName: "CallTool", Handler: callToolHandler},
	},
	Metadata: "plugins/contract.go",
}

func listToolsHandler(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	var in listToolsRequest
	if err := dec(&in); err != nil {
		return nil, err
	}
	tools, err := srv.(LocalTools).ListTools(ctx)
	if err != nil {
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &listToolsResponse{Tools: tools}, nil
}

func callToolHandler(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
	var in CallRequest
	if err := dec(&in); err != nil {
		return nil, err
	}
	res, err := srv.(LocalTools).CallTool(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Error(codes.Unknown, err.Error())
	}
	return &callToolResponse{Result: res}, nil
}

// grpcClient is the host's side of [LocalTools].
type grpcClient struct{ conn *grpc.ClientConn }

var jsonCall = grpc.CallContentSubtype(jsonCodec{}.Name())

func (c *grpcClient) ListTools(ctx context.Context) ([]Tool, error) {
	var out listToolsResponse
	if err := c.conn.Invoke(ctx, "/"+serviceName+"/ListTools", &listToolsRequest{}, &out, jsonCall); err != nil {
		return nil, err
	}
	return out.Tools, nil
}

func (c *grpcClient) CallTool(ctx context.Context, req CallRequest) (*mcp.CallToolResult, error) {
	var out callToolResponse
	if err := c.conn.Invoke(ctx, "/"+serviceName+"/CallTool", &req, &out, jsonCall); err != nil {
		return nil, err
	}
	return out.Result, nil
}

// jsonCodec is the gRPC codec of the contract's messages.
type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error)   { return json.Marshal(v) }
func (jsonCodec) Unmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
func (jsonCodec) Name() string                    { return "manifold-json" }

func init() { encoding.RegisterCodec(jsonCodec{}) }
