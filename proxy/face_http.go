package proxy

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/serve/streamable"
	"github.com/manifold-mcp/manifold/proxy/session"
	"github.com/manifold-mcp/manifold/upstream"
)

// The HTTP face (proxy/serve/streamable) reaches the proxy through
// streamable.Core, which httpCore implements over the Server.

// HTTPOptions configures the streamable HTTP endpoint (streamable.Options).
type HTTPOptions = streamable.Options

// AnswerRelay carries a legacy HTTP client's answer to a server→client
// request to the replica that asked it (streamable.AnswerRelay).
type AnswerRelay = streamable.AnswerRelay

// ErrNoReplica means an answer was published for a replica that does not
// listen: it stopped (its calls ended with it) or is reconnecting.
var ErrNoReplica = streamable.ErrNoReplica

// codeServerError is the JSON-RPC code of the proxy's own server errors.
const codeServerError = -32000

// HTTPServer returns an http.Server for [Server.HTTPHandler]: it bounds the
// time to read request headers and keeps per connection what a session is
// bound to. Serve it on a listener of your choice.
func (s *Server) HTTPServer(opts HTTPOptions) *http.Server {
	return streamable.Server(httpCore{s}, opts)
}

// HTTPHandler serves the proxy over HTTP: the streamable HTTP MCP endpoint
// at /mcp and [Server.HealthHandler]'s /healthz, /readyz, /status and
// /status/clients, behind the checks against DNS rebinding and the limits
// of opts (streamable.Handler).
func (s *Server) HTTPHandler(opts HTTPOptions) http.Handler {
	return streamable.Handler(httpCore{s}, opts)
}

// httpCore is the Server as the HTTP face sees it (streamable.Core).
type httpCore struct{ s *Server }

func (c httpCore) MCPServer() *mcp.Server { return c.s.server }

func (c httpCore) Log() *slog.Logger { return c.s.log }

func (c httpCore) SDKLog() *slog.Logger {
	return slog.New(quietHandler{c.s.log.Handler(), slog.LevelWarn})
}

func (c httpCore) Life() context.Context { return c.s.run.life }

func (c httpCore) Observer() *observe.Observer { return c.s.obs }

func (c httpCore) Calls() *session.Calls { return &c.s.sessions.Calls }

func (c httpCore) Sessions() streamable.SessionStore { return c.s.opts.Sessions }

func (c httpCore) Answers() AnswerRelay { return c.s.opts.Answers }

// ListenAnswers makes deliver the receiver of the answers published to
// this replica, and starts listening for them (once per Server; the
// Server owns the listener, which ends at Close).
func (c httpCore) ListenAnswers(deliver func(session string, msg []byte)) {
	s := c.s
	if s.opts.Answers == nil {
		return
	}
	sink := answerSink(deliver)
	if s.answerTo.Swap(&sink) != nil {
		return
	}
	s.run.wg.Add(1)
	go func() {
		defer s.run.wg.Done()
		s.opts.Answers.ListenAnswers(s.run.life, func(session string, msg []byte) {
			if deliver := s.answerTo.Load(); deliver != nil {
				(*deliver)(session, msg)
			}
		})
	}()
}

func (c httpCore) KeepsEvents(held func() (open, delivered, max int)) {
	stats := eventStats(held)
	c.s.resume.Store(&stats)
}

// answerSink receives the answers other replicas relay (ListenAnswers).
type answerSink func(session string, msg []byte)

// eventStats returns the figures of the HTTP endpoint's event store, for
// the metrics (KeepsEvents).
type eventStats func() (open, delivered, max int)

func (c httpCore) InFlight(delta int64) { c.s.run.inflight.Add(delta) }

func (c httpCore) Draining() bool { return c.s.run.draining.Load() }

func (c httpCore) Health() http.Handler { return c.s.HealthHandler() }

func (c httpCore) Metrics() http.Handler { return c.s.MetricsHandler() }

func (c httpCore) ApprovalPages(base string) http.Handler { return c.s.approver.ServePages(base) }

func (c httpCore) Lean() bool { return !c.s.typed && c.s.catalog.Load() != nil }

func (c httpCore) PerSessionTool(name string) bool {
	cat := c.s.catalog.Load()
	te, found := cat.Tools.Lookup(name)
	return !found || cat.gen.byName[te.Server] == nil || cat.gen.byName[te.Server].PerSession()
}

func (c httpCore) HeaderBound(name string) bool { return c.s.catalog.Load().HeaderBound(name) }

func (c httpCore) SharedUp(name string, who policy.Identity) (*upstream.Upstream, bool) {
	return c.s.catalog.Load().sharedUp(name, who)
}

func (c httpCore) MetaTool(name string) bool { return slices.Contains(metaTools, name) }

func (c httpCore) MayAsk(caps *mcp.ClientCapabilities) bool { return sharedAsks(caps) }

func (c httpCore) StartCall(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, done func(json.RawMessage, error)) {
	c.s.startCall(ctx, ss, name, fields, done)
}

// CallAnswer returns raw as it is when it can be answered so (leanResult),
// else decoded and checked as the typed path does.
func (c httpCore) CallAnswer(name string, raw json.RawMessage) (json.RawMessage, error) {
	if leanResult(raw) {
		return raw, nil
	}
	res, err := typedCallResult(name, raw)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

func (c httpCore) ServerInfo() []byte { return c.s.serverInfo }

func (c httpCore) LeanList(ctx context.Context, ss *mcp.ServerSession, id, params []byte, modern bool, ti *auth.TokenInfo) ([]byte, bool) {
	return c.s.leanList(ctx, ss, id, params, modern, ti)
}
