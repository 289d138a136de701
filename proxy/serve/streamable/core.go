package streamable

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/upstream"
)

// Core is what the HTTP face needs of the proxy (the root implements it).
type Core interface {
	// MCPServer is the SDK server the sessions are connected to.
	MCPServer() *mcp.Server
	// Log is the proxy's logger.
	Log() *slog.Logger
	// SDKLog is the logger handed to the SDK's handlers (warnings and up).
	SDKLog() *slog.Logger
	// Life is the proxy's context: done once it closes.
	Life() context.Context
	// Observer records requests (audit, metrics, traces).
	Observer() *observe.Observer
	// Calls are the HTTP sessions' calls in flight.
	Calls() *session.Calls
	// Sessions keeps the records of sessions shared by replicas (nil: none).
	Sessions() SessionStore
	// Answers relays answers between replicas (nil: none).
	Answers() AnswerRelay
	// ListenAnswers has deliver receive the answers other replicas publish to this one (once per proxy).
	ListenAnswers(deliver func(session string, msg []byte))
	// KeepsEvents hands the endpoint's event store, as its figures, to the metrics.
	KeepsEvents(held func() (open, delivered, max int))
	// InFlight counts a request to /mcp in (delta 1) or out (-1), for draining.
	InFlight(delta int64)
	// Draining reports whether the proxy takes no new work.
	Draining() bool
	// Health serves /healthz, /readyz, /status and /status/clients.
	Health() http.Handler
	// Metrics serves /metrics, or is nil when metrics are off.
	Metrics() http.Handler
	// ApprovalPages serves the pages of URL-mode approvals under base.
	ApprovalPages(base string) http.Handler

	// Lean reports whether tools/call may take the lean path (not typed, a catalog loaded).
	Lean() bool
	// PerSessionTool reports whether the exposed tool name is unknown or its server has a process per session.
	PerSessionTool(name string) bool
	// HeaderBound reports whether the tool name's input schema binds a parameter to a header.
	HeaderBound(name string) bool
	// SharedUp returns the shared server process, up, that serves name for who, and whether name is visible to who.
	SharedUp(name string, who policy.Identity) (up *upstream.Upstream, visible bool)
	// MetaTool reports whether name is a tool of the search surface.
	MetaTool(name string) bool
	// MayAsk reports whether a client that declared caps may be asked during a call (sampling, elicitation).
	MayAsk(caps *mcp.ClientCapabilities) bool
	// StartCall routes one tools/call (ss nil for a 2026-07-28 request) and calls done with its outcome.
	StartCall(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, done func(json.RawMessage, error))
	// CallAnswer returns a call's raw result as the client gets it: as it is, or checked as the typed path does.
	CallAnswer(name string, raw json.RawMessage) (json.RawMessage, error)
	// ServerInfo is the proxy's serverInfo as JSON, for 2026-07-28 results.
	ServerInfo() []byte
	// LeanList answers a tools/list from the prepared lists, or reports false.
	LeanList(ctx context.Context, ss *mcp.ServerSession, id, params []byte, modern bool, ti *auth.TokenInfo) ([]byte, bool)
}
