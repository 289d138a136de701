package stdio

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/observe"
)

// Core is what the stdio face needs of the proxy (the root implements it).
type Core interface {
	// Connect connects the SDK's server to t, the session of every message the lean path does not serve.
	Connect(ctx context.Context, t mcp.Transport) (*mcp.ServerSession, error)
	// StartCall routes and sends the tools/call name with params fields for ss, and calls finish with its result.
	StartCall(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error))
	// LeanList returns the response to id, a tools/list of ss with params, from the prepared list, or false for the SDK to answer.
	LeanList(ctx context.Context, ss *mcp.ServerSession, id, params []byte, modern bool) ([]byte, bool)
	// ServerInfo is the proxy's identity as JSON, for the _meta serverInfo of modern results.
	ServerInfo() []byte
	// Observer is the proxy's audit, metrics and traces.
	Observer() *observe.Observer
	// Log is the proxy's log.
	Log() *slog.Logger
}

// Options are the limits of the face, plain values of the proxy's options.
type Options struct {
	MaxMessageBytes int           // the longest line read; a longer one is discarded and answered with an error
	CallTimeout     time.Duration // bounds, with drainTimeout, how long the answers after the end of input may take
}
