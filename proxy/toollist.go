package proxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The catalog answers tools/list itself (ARCHITECTURE §3 "The hot path is
// lean"): its tools are not registered one by one with the SDK, whose
// AddTool encodes and decodes every input schema to check it, half of the
// proxy's start with a thousand tools, and whose list would only repeat
// what the catalog holds. Two kinds of tool still reach the SDK's registry:
//   - a tool whose input schema binds a parameter to a header
//     (x-mcp-header): the SDK's streamable handler checks such a call's
//     Mcp-Param-* headers against its registered schema, and rejects a
//     schema whose binding is malformed (that tool is then left out of the
//     lists, as before);
//   - beaconTool, registered again at every change of the listed tools, so
//     that the SDK schedules its tools/list_changed for every session, in
//     either era (a modern session's listen included), which
//     relay's ListChangedMiddleware then holds back or coalesces per session.
//
// tools/call never reaches the registry (routingMiddleware routes every
// call by the catalog), and neither does tools/list.

// beaconTool is the registered tool whose registration makes the SDK send
// tools/list_changed. Its name holds a ".", which no exposed name does.
const beaconTool = "manifold.list-changed"

var beaconDef = &mcp.Tool{Name: beaconTool, InputSchema: map[string]any{"type": "object"}}

// notifyToolsChanged makes the SDK send tools/list_changed to its sessions
// (after its short debounce).
func (s *Server) notifyToolsChanged() {
	s.server.AddTool(beaconDef, func(_ context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "` + beaconTool + `"`}
	})
}

// checkHeaderTool is the check that leaves out of a catalog's lists every
// tool whose header binding the SDK would refuse to register (the SDK's
// own check, on a scratch server that serves nothing), with the SDK's
// reason, which register logs (catalog.Builder.Build). Called with catMu
// held, before the catalog is stored.
func (s *Server) checkHeaderTool(name string, def *mcp.Tool) error {
	if s.builder.scratch == nil {
		s.builder.scratch = mcp.NewServer(implementation(), nil)
	}
	err := catchPanic(func() { s.builder.scratch.AddTool(def, nil) })
	s.builder.scratch.RemoveTools(name)
	return err
}
