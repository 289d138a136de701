//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, but the proxy serves clients on 2024-11-05 to 2025-11-25, for whom they are part of the protocol (ARCHITECTURE §3 "Protocol versions").

package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/upstream"
	"github.com/manifold-mcp/manifold/upstream/supervise"
)

// Backend is one configured server as the relay reads it: its supervision
// (upstream/supervise: state, connection, processes, calls in flight) and
// what its config says of relaying. The root's backend is one.
type Backend interface {
	Name() string
	PerSession() bool
	PerIdentity() bool
	Snapshot() (supervise.State, *upstream.Upstream, error)
	Conn() (supervise.State, *upstream.Upstream, *mcp.ServerCapabilities)
	SessionProc(ss *mcp.ServerSession) *upstream.Upstream
	CallOf(ss *mcp.ServerSession) context.Context
	SoleCaller() (n int, ss *mcp.ServerSession, call context.Context)
	BusySessions() []*mcp.ServerSession
	Capabilities() *mcp.ServerCapabilities
	// Log is the server's logger.
	Log() *slog.Logger
	// CallTimeout bounds one request to the server.
	CallTimeout() time.Duration
	// Unsolicited is what the server may ask outside any call of its client.
	Unsolicited() Unsolicited
}

// Options is what the relay needs of the root.
type Options struct {
	// WaitForClient: one client is served, over stdio (the root's
	// Options.WaitForClient); else the clients are HTTP sessions.
	WaitForClient bool
	// Sessions are the downstream sessions (the SDK server's).
	Sessions func() iter.Seq[*mcp.ServerSession]
	// Backends are the servers of the current generation.
	Backends func() iter.Seq[Backend]
	// ClientCaps are the capabilities the stdio client declared (nil over
	// HTTP, or before it initialized); ClientModern says it speaks
	// 2026-07-28.
	ClientCaps   func() *mcp.ClientCapabilities
	ClientModern func() bool
	// Modern reports whether a session speaks 2026-07-28.
	Modern func(ss *mcp.ServerSession) bool
	// Parked hands an upstream's request to the parked call of a modern
	// client that ctx belongs to and decodes the answer into res (a
	// pointer); ok is false when ctx belongs to no such call.
	Parked func(ctx context.Context, method, mode string, params, res any) (ok bool, err error)
	// Bridged reports whether a call in flight is a modern client's bridged
	// call, whose requests the bridge checks (Parked).
	Bridged func(call context.Context) bool
	// NeedCap returns the error for a request that caps lack the
	// capability of (nil if they have it); mode is an elicitation's.
	NeedCap func(method, server, mode string, caps *mcp.ClientCapabilities) error

	// Resource subscriptions (subscribe.go).

	// Subscribable resolves the URI of a client's resources/subscribe to
	// its server, the server's URI and the outward (canonical) URI the
	// subscription is recorded under; its error is the answer (a resource
	// that is unknown or not visible to the client is not found).
	Subscribable func(ctx context.Context, req *mcp.SubscribeRequest) (server, original, uri string, err error)
	// Resolve resolves an outward URI in the current catalog, as
	// Subscribable without the visibility check.
	Resolve func(uri string) (server, original, outward string, ok bool, err error)
	// Owners returns the current catalog's owner of an outward URI: its
	// server and the server's URI.
	Owners func() func(uri string) (server, original string, ok bool)
	// Upstream returns the running upstream session of server, or an error
	// that says why there is none.
	Upstream func(ctx context.Context, server string) (*mcp.ClientSession, Backend, error)
	// WhenSessionEnds runs f once ss has ended (unless the proxy closes
	// first).
	WhenSessionEnds func(ss *mcp.ServerSession, f func())
	// Closed reports whether the proxy has closed.
	Closed func() bool
	// Life ends when the proxy closes; Log is the proxy's logger.
	Life context.Context
	Log  *slog.Logger
}

// Relay carries what upstreams send towards clients: their requests
// (sampling, elicitation, roots), log messages, progress and resource
// updates, with the logging level and the subscriptions clients set.
type Relay struct {
	opts     Options
	subs     subscriptions
	progress progressRoutes
	elicit   elicitations
	logLevel atomic.Pointer[string]
	listed   listedKinds // who listed which kind, pending list_changed (listchanged.go)
	listens  listenCount // open subscriptions/listen per session (listchanged.go)
}

// New returns the relay of one proxy.
func New(opts Options) *Relay {
	return &Relay{opts: opts}
}

// askParked hands an upstream's request to the parked call ctx belongs to
// (Options.Parked), decoding the client's answer as T.
func askParked[T any](s *Relay, ctx context.Context, method, mode string, params any) (res T, ok bool, err error) {
	ok, err = s.opts.Parked(ctx, method, mode, params, &res)
	return res, ok, err
}

// MapToken replaces the progress token in a call's raw _meta (see
// progressRoutes.mapToken).
func (s *Relay) MapToken(ctx context.Context, ss *mcp.ServerSession, meta json.RawMessage, b Backend, fixed *mcp.ServerSession) (json.RawMessage, string, func(), error) {
	return s.progress.mapToken(ctx, ss, meta, b, fixed)
}

// Rebind sends the progress of route id to a resumed call's request
// (progressRoutes.rebind).
func (s *Relay) Rebind(id string, ctx context.Context, ss *mcp.ServerSession, meta json.RawMessage) {
	s.progress.rebind(id, ctx, ss, meta)
}

// RebindRemote sends the progress of route id to another replica
// (progressRoutes.rebindRemote).
func (s *Relay) RebindRemote(id string, send func(*mcp.ProgressNotificationParams)) {
	s.progress.rebindRemote(id, send)
}

// ForwardProgress relays a progress notification of b's process
// (progressRoutes.forward).
func (s *Relay) ForwardProgress(b Backend, fixed *mcp.ServerSession, params *mcp.ProgressNotificationParams) {
	s.progress.forward(b, fixed, params)
}

// RememberElicitation records the session a URL-mode elicitation of b went
// to, for its notifications/elicitation/complete.
func (s *Relay) RememberElicitation(id string, b Backend, ss *mcp.ServerSession) {
	s.elicit.remember(id, b, ss)
}

// This file relays server->client requests (sampling, elicitation, roots) from
// upstreams to the downstream session they belong to, and roots/list_changed
// from clients to upstreams.
//
// Under the protocol versions served here an upstream's request carries no
// link to the downstream request that caused it, so a request is relayed only
// where its client is certain. A process that serves exactly one client is
// offered the capabilities that client declared: every upstream over stdio
// (one client), and a session's own process (isolation = "session") over
// HTTP. A shared process over HTTP serves every HTTP session: it is offered
// sampling and elicitation, and a request it sends goes to the one caller
// with requests in flight on it (soleCaller), on that call's stream, when
// that caller declared the capability; while no caller or several have
// requests in flight on it the request cannot be attributed and is refused
// with an error that names isolation = "session", so that one client never
// receives another's request. A request without a session (a 2026-07-28
// call served on the lean path) counts as a caller of its own.
// Roots are offered only with isolation = "session": roots widen what a
// server such as server-filesystem lets its clients reach, so one client's
// roots must never govern a process that another client uses, and the same
// config grants the same folders over stdio and HTTP. A shared server uses
// the folders of its config.
//
// Sampling and elicitation are relayed while the client has a call in flight
// on that server; outside any call (unsolicited) only if the config allows it
// (ServerConfig.AllowUnsolicited). Every refused request gets an error that
// names what is missing.

// errNoClient is returned to an upstream whose request has nobody to go to.
var errNoClient = errors.New("no client is connected to the proxy")

// Methods are the server->client requests, with the capability each
// needs.
var Methods = map[string]string{
	"sampling/createMessage": "sampling",
	"elicitation/create":     "elicitation",
	"roots/list":             "roots",
}

// offer says which client capabilities one upstream process is offered and,
// for those it is not, why.
type offer struct {
	caps   *mcp.ClientCapabilities // what the process's client declared; nil: no client known
	why    string                  // why nothing is offered when caps is nil
	modern bool                    // the client speaks 2026-07-28: it declares capabilities per request
}

// sharedHTTPCaps are the capabilities a shared process over HTTP is
// offered: what any of its callers may declare, checked against the one
// that a request goes to (sessionFor). Sampling is offered without its
// tools sub-capability, which the callers would all have to declare.
func sharedHTTPCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		Sampling:    &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}
}

// offerFor returns what b's process is offered: fixed's declared
// capabilities for a session's own process, the stdio client's for a shared
// process in stdio mode, sampling and elicitation for a shared process over
// HTTP (sharedHTTPCaps), and nothing for the shared process of a server
// whose calls run in processes or connections of their own (isolation =
// "session", credentials = "identity"): its calls in flight are not its own.
func (s *Relay) offerFor(b Backend, fixed *mcp.ServerSession) offer {
	if fixed != nil {
		var caps *mcp.ClientCapabilities
		if ip := fixed.InitializeParams(); ip != nil {
			caps = ip.Capabilities
		}
		if caps == nil {
			caps = &mcp.ClientCapabilities{}
		}
		return offer{caps: caps, modern: s.opts.Modern(fixed)}
	}
	if !s.opts.WaitForClient {
		if b.PerSession() || b.PerIdentity() {
			return offer{why: fmt.Sprintf("this process of %q serves no client's call (its calls run in processes or connections of their own), so a request from it cannot be attributed to one of them", b.Name())}
		}
		return offer{caps: sharedHTTPCaps()}
	}
	caps := s.opts.ClientCaps()
	if caps == nil {
		caps = &mcp.ClientCapabilities{}
	}
	return offer{caps: caps, modern: s.opts.ClientModern()}
}

// refusal is the error for a server->client request that b's process was not
// offered the capability for.
func (o offer) refusal(b Backend, method string) error {
	capName := Methods[method]
	why := o.why
	switch {
	case why != "":
	case capName == "roots" && !b.PerSession():
		why = fmt.Sprintf("roots are relayed only to a server with isolation = \"session\", whose process serves one client; %q is shared, so it uses the folders of its config", b.Name())
	case o.modern:
		why = fmt.Sprintf("the client did not declare the %s capability (in the _meta clientCapabilities of the request that set this process up)", capName)
	default:
		why = fmt.Sprintf("the client did not declare the %s capability in initialize", capName)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
		"%s from %q refused: the proxy did not offer the %s capability to this server: %s", method, b.Name(), capName, why)}
}

// Refusal is the error for a request method from b's process that it was
// not offered the capability for, the client's capabilities unknown (see
// offer.refusal).
func Refusal(b Backend, method string) error {
	return offer{}.refusal(b, method)
}

// Offer adds to opts the handlers (and so the capabilities) for the
// server->client requests b's process is offered (see offerFor), and returns
// the receiving middleware that answers roots/list and refuses, naming the
// missing capability, the requests that were not offered.
func (s *Relay) Offer(opts *mcp.ClientOptions, b Backend, fixed *mcp.ServerSession) []mcp.Middleware {
	o := s.offerFor(b, fixed)
	caps := &mcp.ClientCapabilities{}
	opts.Capabilities = caps
	dc := o.caps
	if dc == nil {
		dc = &mcp.ClientCapabilities{}
	}
	offered := map[string]bool{}
	if dc.Sampling != nil {
		offered["sampling/createMessage"] = true
		// includeContext is reduced to "none" (one server never sees another's
		// context), so the context sub-capability is not offered.
		caps.Sampling = &mcp.SamplingCapabilities{}
		if dc.Sampling.Tools != nil {
			caps.Sampling.Tools = &mcp.SamplingToolsCapabilities{}
			opts.CreateMessageWithToolsHandler = func(ctx context.Context, r *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
				ss, ctx, done, err := s.sessionFor(ctx, b, fixed, "sampling/createMessage", "")
				if err != nil {
					return nil, err
				}
				defer done()
				p := *r.Params
				p.IncludeContext = NoContext(p.IncludeContext)
				if res, parked, err := askParked[*mcp.CreateMessageWithToolsResult](s, ctx, "sampling/createMessage", "", &p); parked {
					return res, err
				}
				return ss.CreateMessageWithTools(ctx, &p)
			}
		} else {
			opts.CreateMessageHandler = func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				ss, ctx, done, err := s.sessionFor(ctx, b, fixed, "sampling/createMessage", "")
				if err != nil {
					return nil, err
				}
				defer done()
				p := *r.Params
				p.IncludeContext = NoContext(p.IncludeContext)
				if res, parked, err := askParked[*mcp.CreateMessageResult](s, ctx, "sampling/createMessage", "", &p); parked {
					return res, err
				}
				return ss.CreateMessage(ctx, &p)
			}
		}
	}
	var mws []mcp.Middleware
	if dc.Elicitation != nil {
		offered["elicitation/create"] = true
		e := *dc.Elicitation
		caps.Elicitation = &e
		// The handler declares the capability; requests are answered by the
		// middleware below, before the SDK client's own schema validation,
		// which rejects valid enum schemas (SEP-1330). The client the request
		// is relayed to validates what it shows, as it would directly.
		opts.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return s.relayElicit(ctx, b, fixed, r.Params)
		}
		opts.ElicitationCompleteHandler = func(ctx context.Context, r *mcp.ElicitationCompleteNotificationRequest) {
			if r.Params == nil {
				return
			}
			if ss := s.elicit.take(r.Params.ElicitationID, b); ss != nil {
				_ = ss.NotifyElicitationComplete(ctx, r.Params)
			}
		}
		mws = append(mws, func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if r, ok := req.(*mcp.ElicitRequest); ok && method == "elicitation/create" {
					return s.relayElicit(ctx, b, fixed, r.Params)
				}
				return next(ctx, method, req)
			}
		})
	}
	if dc.RootsV2 != nil && b.PerSession() {
		offered["roots/list"] = true
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
		mws = append(mws, func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method != "roots/list" {
					return next(ctx, method, req)
				}
				ss, ctx, done, err := s.sessionFor(ctx, b, fixed, "roots/list", "")
				if err != nil {
					return nil, err
				}
				defer done()
				if res, parked, err := askParked[*mcp.ListRootsResult](s, ctx, "roots/list", "", &mcp.ListRootsParams{}); parked {
					return res, err
				}
				return ss.ListRoots(ctx, nil)
			}
		})
	}
	// What was not offered is refused, with the reason (the middlewares above
	// pass on every method they were not offered).
	mws = append(mws, func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if _, relay := Methods[method]; relay && !offered[method] {
				return nil, o.refusal(b, method)
			}
			return next(ctx, method, req)
		}
	})
	return mws
}

// relayElicit relays an upstream's elicitation/create to its client, with the
// message naming the server that asks.
func (s *Relay) relayElicit(ctx context.Context, b Backend, fixed *mcp.ServerSession, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation/create needs params"}
	}
	ss, ctx, done, err := s.sessionFor(ctx, b, fixed, "elicitation/create", ElicitMode(params))
	if err != nil {
		return nil, err
	}
	defer done()
	p := *params
	// The client can only name "the proxy"; the user must see which server
	// asks.
	p.Message = fmt.Sprintf("[%s] %s", b.Name(), p.Message)
	if res, parked, err := askParked[*mcp.ElicitResult](s, ctx, "elicitation/create", ElicitMode(&p), &p); parked {
		return res, err
	}
	if p.ElicitationID != "" {
		s.elicit.remember(p.ElicitationID, b, ss)
	}
	return ss.Elicit(ctx, &p)
}

// ElicitMode returns an elicitation's mode: "url" with a URL, else "form".
func ElicitMode(p *mcp.ElicitParams) string {
	if p.Mode == "url" || p.Mode == "" && p.URL != "" {
		return "url"
	}
	return "form"
}

// NoContext reduces an includeContext other than none to none: through the
// proxy, "thisServer" would mean every server, and one server must never see
// another's context.
func NoContext(ic string) string {
	if ic == "" {
		return ""
	}
	return "none"
}

// sessionFor picks the downstream session an upstream's request goes to: the
// one client of b's process (fixed, or the stdio client), or for a shared
// process over HTTP the one caller with requests in flight on it
// (callerFor). It also returns the context to relay the request with: one
// that carries the incoming request of that session's call in flight on b
// (so that over streamable HTTP the request goes out on the call's response
// stream, which the client is reading, and not on the standalone GET stream,
// which it may not have opened) and that is cancelled with ctx, the
// upstream's request; done releases it. A sampling or elicitation request
// while the session has no call in flight on b is refused unless b's config
// allows it (not over HTTP for a shared process: see callerFor). mode is an
// elicitation's mode (ElicitMode).
func (s *Relay) sessionFor(ctx context.Context, b Backend, fixed *mcp.ServerSession, method, mode string) (*mcp.ServerSession, context.Context, func(), error) {
	if fixed == nil && !s.opts.WaitForClient {
		return s.callerFor(ctx, b, method, mode)
	}
	ss := fixed
	if ss == nil {
		var err error
		if ss, err = s.soleSession(b, method); err != nil {
			return nil, nil, nil, err
		}
	}
	call := b.CallOf(ss)
	if call == nil && !b.Unsolicited().allows(method) {
		kind := Methods[method]
		return nil, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
			"%s from %q refused: it came outside any call of the client, and unsolicited requests are not relayed; to allow them set allow_unsolicited = [%q] for this server in the proxy config",
			method, b.Name(), kind)}
	}
	rctx, done := relayContext(ctx, call)
	return ss, rctx, done, nil
}

// callerFor picks the caller a shared process over HTTP asks: the one
// caller with requests in flight on b (soleCaller), if there is exactly one
// and it declared what method needs (needCap; a 2026-07-28 client's call is
// checked by its bridge, askParked). With none or several the request
// cannot be attributed to a client, and the error says so and names the
// fix, isolation = "session": a process of each client's own. An
// unsolicited request (allow_unsolicited) has nobody to go to here either.
func (s *Relay) callerFor(ctx context.Context, b Backend, method, mode string) (*mcp.ServerSession, context.Context, func(), error) {
	n, ss, call := b.SoleCaller()
	var why string
	switch {
	case n > 1:
		why = "several clients have requests in flight on it"
	case n == 0, call == nil: // none, or its requests have ended
		why = "no client has a request in flight on it"
	}
	if why != "" {
		return nil, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf(
			"%s from %q refused: %q is shared by every HTTP client session and %s, so the request cannot be attributed to one client; set isolation = \"session\" for it in the proxy config to relay requests to the client whose call asks",
			method, b.Name(), b.Name(), why)}
	}
	if !s.opts.Bridged(call) {
		// An initialize-era session's call, or a call without a session
		// (which declared nothing it could be asked with).
		caps := &mcp.ClientCapabilities{}
		if ss != nil {
			if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil {
				caps = ip.Capabilities
			}
		}
		if err := s.opts.NeedCap(method, b.Name(), mode, caps); err != nil {
			return nil, nil, nil, err
		}
		if ss == nil { // needCap refuses it: declared nothing
			return nil, nil, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("%s from %q refused: the client's call cannot be asked anything", method, b.Name())}
		}
	}
	rctx, done := relayContext(ctx, call)
	return ss, rctx, done, nil
}

// Unsolicited names the server->client requests a server may send outside
// any call of its client (roots/list always may: servers ask for roots when
// they start and when the client says its roots changed).
type Unsolicited struct {
	Sampling    bool
	Elicitation bool
}

// allows reports whether method may be relayed outside any call.
func (u Unsolicited) allows(method string) bool {
	switch method {
	case "sampling/createMessage":
		return u.Sampling
	case "elicitation/create":
		return u.Elicitation
	}
	return true
}

// soleSession returns the one initialized downstream session (stdio mode).
func (s *Relay) soleSession(b Backend, method string) (*mcp.ServerSession, error) {
	var all []*mcp.ServerSession
	for ss := range s.opts.Sessions() {
		if ss.InitializeParams() != nil {
			all = append(all, ss)
		}
	}
	switch len(all) {
	case 0:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s from %q: %v", method, b.Name(), errNoClient)}
	case 1:
		return all[0], nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
		"%s from %q cannot be attributed to one client: %d clients are connected; set isolation = \"session\" for it in the proxy config",
		method, b.Name(), len(all))}
}

// relayContext returns a context with the values of call (the downstream
// call a relayed message belongs to; nil if none) and the cancellation of
// upstream (the upstream's request, or the life of its connection). The call
// itself may end first without cancelling what was relayed on its behalf.
func relayContext(upstream, call context.Context) (context.Context, func()) {
	if call == nil {
		return upstream, func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(call))
	stop := context.AfterFunc(upstream, cancel)
	return ctx, func() { stop(); cancel() }
}

// RootsChanged tells the upstream processes that were offered the roots of
// the session whose roots changed (see Offer); they ask again with
// roots/list, which is relayed to that session.
func (s *Relay) RootsChanged(ctx context.Context, req *mcp.RootsListChangedRequest) {
	ss := req.Session
	for b := range s.opts.Backends() {
		if !b.PerSession() {
			continue
		}
		if s.opts.WaitForClient { // stdio: the shared process is the client's own
			if st, up, _ := b.Snapshot(); st == supervise.StateUp && up != nil {
				up.NotifyRootsChanged()
			}
			continue
		}
		if up := b.SessionProc(ss); up != nil {
			up.NotifyRootsChanged()
		}
	}
}

// elicitations maps URL-mode elicitation ids to the session that was asked, so
// that notifications/elicitation/complete reaches only that session.
type elicitations struct {
	mu   sync.Mutex
	byID map[string]elicitRoute // guarded by mu
}

type elicitRoute struct {
	b  Backend
	ss *mcp.ServerSession
}

func (e *elicitations) remember(id string, b Backend, ss *mcp.ServerSession) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byID == nil {
		e.byID = make(map[string]elicitRoute)
	}
	e.byID[b.Name()+"\x00"+id] = elicitRoute{b, ss}
}

func (e *elicitations) take(id string, b Backend) *mcp.ServerSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.byID[b.Name()+"\x00"+id]
	if !ok {
		return nil
	}
	delete(e.byID, b.Name()+"\x00"+id)
	return r.ss
}
