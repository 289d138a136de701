//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, and bridging them is what is tested.

package proxy

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/era"
)

var testBind = era.Binding{Method: "tools/call", Name: "fx__ask", Upstream: "fx", Principal: "anonymous:t/1"}

// outcomes collects what a parked call delivers to its requests.
type outcomes chan callOutcome

// callOutcome is one delivery of a parked call to its request.
type callOutcome struct {
	raw json.RawMessage
	err error
}

func (o outcomes) finish(raw json.RawMessage, err error) { o <- callOutcome{raw, err} }

func elicitCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
}
