package route

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/policy"
	"github.com/manifold-mcp/manifold/proxy/bridge"
	"github.com/manifold-mcp/manifold/proxy/catalog"
	"github.com/manifold-mcp/manifold/proxy/confirm"
	"github.com/manifold-mcp/manifold/proxy/era"
	"github.com/manifold-mcp/manifold/proxy/guard"
	"github.com/manifold-mcp/manifold/proxy/observe"
	"github.com/manifold-mcp/manifold/proxy/relay"
	"github.com/manifold-mcp/manifold/upstream"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// Route runs the call pipeline over the rooms it is given.
type Route struct {
	host          Host
	pipe          Pipeline
	guard         *guard.Guard
	obs           *observe.Observer
	bridge        *bridge.Bridges
	approver      *confirm.Approver
	relay         *relay.Relay
	stateTTL      time.Duration
	waitForClient bool
}

// Pipeline is the order of a call's steps and of its result's filters,
// which the composition writes once.
type Pipeline struct {
	// Steps run on the caller's goroutine (for stdio, the one that reads
	// the client: no hand-off per call); SendSteps too, unless the call may
	// wait for something (mayWait), then on a goroutine of their own.
	Steps, SendSteps []Step
	// Filters rewrite an upstream's successful result, in order.
	Filters []Filter
}

// Options is what the route is built from: the rooms a call passes
// through, the root as Host, and the order of the pipeline.
type Options struct {
	Host     Host
	Pipeline Pipeline
	Guard    *guard.Guard
	Observer *observe.Observer
	Bridge   *bridge.Bridges
	Approver *confirm.Approver
	Relay    *relay.Relay
	// StateTTL bounds the lifetime of a call's sealed state; if zero, the
	// call's timeout.
	StateTTL time.Duration
	// WaitForClient is the root's Options.WaitForClient: the proxy serves
	// one client, which the principal of a call's state need not name.
	WaitForClient bool
}

// New returns the route of o.
func New(o Options) *Route {
	return &Route{host: o.Host, pipe: o.Pipeline, guard: o.Guard, obs: o.Observer, bridge: o.Bridge,
		approver: o.Approver, relay: o.Relay, stateTTL: o.StateTTL, waitForClient: o.WaitForClient}
}

// Host is what only the root knows and the route asks of it: the catalog
// in force and the servers of its generation, the proxy's readiness and
// stopping, the search surface, a session's client and mode, and the
// caller's own connections.
type Host interface {
	// Stopping reports whether Close has begun, and the tool error a call
	// then gets.
	Stopping() (json.RawMessage, bool)
	// Ready is closed when every upstream's initial start has finished;
	// WaitReady waits for it, bounded by the first-list timeout.
	Ready() <-chan struct{}
	WaitReady(ctx context.Context)
	// Catalog is the catalog in force.
	Catalog() Generation
	// Mode returns the catalog mode of the client of a request on ss,
	// deciding it first (as a list would) if decide.
	Mode(ctx context.Context, ss *mcp.ServerSession, decide bool) string
	// CallSpan starts the SERVER span of a tools/call of name and returns
	// finish wrapped to end it.
	CallSpan(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) (context.Context, func(json.RawMessage, error))
	// ServeSurface answers a call of a meta-tool of the search surface and
	// reports whether it did.
	ServeSurface(ctx context.Context, ss *mcp.ServerSession, name string, fields map[string]json.RawMessage, finish func(json.RawMessage, error)) bool
	// Via names the call tool that made this call, if one did.
	Via(ctx context.Context) string
	// ClientName is the name a request without a session (a 2026-07-28
	// request over HTTP) gives its client.
	ClientName(ctx context.Context) string
	// UpFor returns the running upstream session of the server of that
	// name in the current generation, or an error that says why there is
	// none (and the server, if there is one).
	UpFor(ctx context.Context, server string) (*mcp.ClientSession, Server, error)
	// IdentityUpstream is b's connection that carries the caller's own
	// credential; SessionUpstream ss's own process of b (nil when b is
	// shared), or the caller's own connection for a per-identity b.
	IdentityUpstream(ctx context.Context, b Server) (*upstream.Upstream, error)
	SessionUpstream(ctx context.Context, b Server, ss *mcp.ServerSession) (*upstream.Upstream, error)
	// ForgetIdentity drops the caller's connection of b after err, when err
	// says its credential is no good.
	ForgetIdentity(ctx context.Context, b Server, err error)
}

// Generation is one catalog as the route reads it: the snapshot and the
// servers of the generation it was built from.
type Generation interface {
	// View is the snapshot.
	View() *catalog.Snapshot
	// Server is the server of that name, nil if none.
	Server(name string) Server
	// DownServer is the server whose namespace holds the exposed name when
	// it is down with no listing (an error message's guess), nil if none.
	DownServer(name string) Server
}

// Server is one configured server as a call reaches it: as the relay reads
// it, and its supervision (upstream/supervise: start, processes, calls in
// flight) and the capabilities declared to it.
type Server interface {
	relay.Backend
	EnsureUp(ctx context.Context)
	Unavailable() string
	Enter(ctx context.Context, ss *mcp.ServerSession) func()
	CallUpstream(ss *mcp.ServerSession) (*upstream.Upstream, error)
	// CapsMemo holds the capabilities declared to it for a call
	// (era.UpstreamCaps).
	CapsMemo() *era.CapsMemo
}

// mayWait reports whether the rest of a call of a visible tool, decided d on
// backend b, may wait for something else than writing to its server: then
// it does not run on the caller's goroutine (startCall).
func (r *Route) mayWait(b Server, d policy.Decision, re era.Request, fields map[string]json.RawMessage) bool {
	if b == nil || d.Confirm || b.PerIdentity() || b.PerSession() {
		return true // a person's approval, a connection or process of its own
	}
	if r.guard.MayWait(d.Limits) {
		return true // a round trip to the shared store
	}
	st, up, _ := b.Snapshot()
	if st != supervise.StateUp || up == nil {
		return true // a lazy server starts first
	}
	return bridge.MayWait(re, fields, up.Modern()) // a parked call resumed, or one parked on a legacy server
}

// perCall reports whether a call of a modern client on session ss to b
// (whose shared process is up) runs in a process of its own: over HTTP (the
// request has no session) for a server with isolation = "session" that
// speaks the initialize era, whose requests could otherwise not be tied to
// the call.
func (r *Route) perCall(b Server, ss *mcp.ServerSession, up *upstream.Upstream) bool {
	return b.PerSession() && ss != nil && ss.ID() == "" && !r.waitForClient && !up.Modern()
}

// RecordSession fills what rec says of ss, the request's session (nil for
// a 2026-07-28 request over HTTP): its id, and its client's name when the
// client gave one at initialize.
func RecordSession(rec *observe.Record, ss *mcp.ServerSession) {
	if ss != nil {
		rec.Session = ss.ID()
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			rec.Client = ip.ClientInfo.Name
		}
	}
}

// spendLines are guard's spend lines as the audit record's.
func spendLines(in []guard.AuditSpend) []observe.Spend {
	out := make([]observe.Spend, len(in))
	for i, sp := range in {
		out[i] = observe.Spend(sp)
	}
	return out
}
