package proxy

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	cat "github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/route"
	"github.com/manifold-mcp/manifold/upstream"
)

// pipeline is the order of the call pipeline (proxy/route): each step and
// filter is supplied by the room that owns its concern, and adding one is
// its room's code plus one line here.
var pipeline = route.Pipeline{
	Steps: []route.Step{
		(*route.ToolCall).RefuseStopping, // drain.go
		(*route.ToolCall).Resolve,        // catalog: name, decision
	},
	SendSteps: []route.Step{
		(*route.ToolCall).Retried,        // bridge: a modern client's retry with input
		(*route.ToolCall).Admit,          // guard: argument limits, budgets
		(*route.ToolCall).Connect,        // upstream/supervise: the server up, the caller's own process
		(*route.ToolCall).AdmitRate,      // guard: rates
		(*route.ToolCall).BindLimits,     // the call's timeout and state lifetime
		(*route.ToolCall).Confirm,        // confirm: a person approves the call
		(*route.ToolCall).Park,           // bridge: a modern client's call on a legacy server
		(*route.ToolCall).UpstreamParams, // era, relay, observe: the request the upstream gets
	},
	Filters: []route.Filter{
		(*route.ToolCall).MaskResult,  // guard: secrets first, so spend and labels never see one
		(*route.ToolCall).CountSpend,  // guard
		(*route.ToolCall).RewriteURIs, // catalog: the server's URIs as the client knows them
		(*route.ToolCall).AdaptResult, // era: what the client's version has
		(*route.ToolCall).LabelResult, // guard: after adapting (the text made of structuredContent is the server's too)
		(*route.ToolCall).CapResult,   // guard: max_result_bytes
		(*route.ToolCall).SealState,   // bridge: a modern client's requestState
	},
}

// newRoute is the call pipeline over the rooms of s.
func (s *Server) newRoute() *route.Route {
	return route.New(route.Options{Host: (*routeHost)(s), Pipeline: pipeline, Guard: s.guard, Observer: s.obs,
		Bridge: s.bridge, Approver: s.approver, Relay: s.relay, StateTTL: s.opts.StateTTL, WaitForClient: s.opts.WaitForClient})
}

// routeHost is the Server as the route's Host: what only the root knows.
type routeHost Server

func (h *routeHost) Stopping() (json.RawMessage, bool) {
	if !h.run.stopping.Load() {
		return nil, false
	}
	return stoppingResult(), true
}

func (h *routeHost) Ready() <-chan struct{} { return h.run.ready }

func (h *routeHost) WaitReady(ctx context.Context) { (*Server)(h).waitReady(ctx) }

func (h *routeHost) Catalog() route.Generation { return h.catalog.Load() }

func (h *routeHost) Mode(ctx context.Context, ss *mcp.ServerSession, decide bool) string {
	s := (*Server)(h)
	return s.sessionMode(ctx, ss, nil, s.catalog.Load(), decide)
}

func (h *routeHost) CallSpan(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) (context.Context, func(json.RawMessage, error)) {
	return startCallSpan(h.obs, ctx, ss, name, fields, finish)
}

func (h *routeHost) ServeSurface(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) bool {
	return (*Server)(h).serveSurface(ctx, ss, name, fields, finish)
}

func (h *routeHost) Via(ctx context.Context) string {
	via, _ := ctx.Value(innerCallKey{}).(string)
	return via
}

func (h *routeHost) ClientName(ctx context.Context) string { return clientOf(ctx, nil, nil).Name }

func (h *routeHost) UpFor(ctx context.Context, server string) (*mcp.ClientSession, route.Server, error) {
	cs, b, err := (*Server)(h).upFor(ctx, server)
	if b == nil {
		return cs, nil, err
	}
	return cs, b, err
}

func (h *routeHost) IdentityUpstream(ctx context.Context, b route.Server) (*upstream.Upstream, error) {
	return (*Server)(h).identityUpstream(ctx, b.(*backend))
}

func (h *routeHost) SessionUpstream(ctx context.Context, b route.Server, ss *mcp.ServerSession) (*upstream.Upstream, error) {
	return (*Server)(h).sessionUpstream(ctx, b.(*backend), ss)
}

func (h *routeHost) ForgetIdentity(ctx context.Context, b route.Server, err error) {
	b.(*backend).forgetIdentity(ctx, err)
}

// The catalog is a route.Generation.

// View is the snapshot.
func (c *catalog) View() *cat.Snapshot { return c.Snapshot }

// Server is the backend of that name, nil if none.
func (c *catalog) Server(name string) route.Server {
	if b := c.gen.byName[name]; b != nil {
		return b
	}
	return nil
}

// DownServer is downServer (call.go) as a route.Server.
func (c *catalog) DownServer(name string) route.Server {
	if b := c.downServer(name); b != nil {
		return b
	}
	return nil
}

// CapsMemo holds the capabilities declared to b for a call.
func (b *backend) CapsMemo() *era.CapsMemo { return &b.capsJSON }
