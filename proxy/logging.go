//lint:file-ignore SA1019 MCP logging is deprecated as of protocol 2026-07-28, but the proxy serves clients on 2024-11-05 to 2025-11-25, for whom it is part of the protocol (ARCHITECTURE §3 "Protocol versions").

package proxy

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP logging relay (downstream logging/setLevel to every upstream,
// upstream notifications/message back to the clients) is proxy/relay's.

// serverCapabilities are the capabilities the proxy declares downstream,
// explicitly, because the catalog changes while the proxy runs: tools,
// resources with subscribe, prompts (all with listChanged), completions and
// logging.
func serverCapabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{
		Tools:       &mcp.ToolCapabilities{ListChanged: true},
		Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		Prompts:     &mcp.PromptCapabilities{ListChanged: true},
		Completions: &mcp.CompletionCapabilities{},
		Logging:     &mcp.LoggingCapabilities{},
	}
}
