//lint:file-ignore SA1019 sampling and roots are deprecated as of protocol 2026-07-28, but the proxy serves clients on 2024-11-05 to 2025-11-25, for whom they are part of the protocol (ARCHITECTURE §3 "Protocol versions").

package proxy

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// This file relays server->client requests (sampling, elicitation, roots) from
// upstreams to the downstream session they belong to, and roots/list_changed
// from clients to upstreams.
//
// Under the protocol versions served here an upstream's request carries no
// link to the downstream request that caused it, so the proxy attributes it:
// with one downstream session (stdio) it is that session; with several (HTTP)
// it is the one session that has a call in flight on that upstream. A request
// that cannot be attributed to exactly one session is refused with an error
// that says so.

// errNoClient is returned to an upstream whose request has nobody to go to.
var errNoClient = errors.New("no client is connected to the proxy")

// relayCaps are the client capabilities the proxy offers upstreams: only what
// the downstream client declared (ARCHITECTURE §3; spec: only negotiated
// capabilities may be used). nil means none.
func (s *Server) relayCaps() *mcp.ClientCapabilities {
	s.capsMu.Lock()
	defer s.capsMu.Unlock()
	return s.clientCaps
}

// allRelayCaps are offered to upstreams shared by several clients (HTTP): the
// SDK refuses a relayed request that the target session did not declare.
func allRelayCaps() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		Sampling:    &mcp.SamplingCapabilities{Tools: &mcp.SamplingToolsCapabilities{}},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		RootsV2:     &mcp.RootCapabilities{ListChanged: true},
	}
}

// setClientCaps records the capabilities upstreams may be offered. It is
// called once, before the upstreams start.
func (s *Server) setClientCaps(c *mcp.ClientCapabilities) {
	s.capsMu.Lock()
	defer s.capsMu.Unlock()
	s.clientCaps = c
}

// relayOptions adds to opts the handlers (and so the capabilities) for the
// server->client requests the downstream client supports, and returns the
// receiving middleware that answers roots/list.
func (s *Server) relayOptions(opts *mcp.ClientOptions, b *backend, fixed *mcp.ServerSession) []mcp.Middleware {
	dc := s.relayCaps()
	caps := &mcp.ClientCapabilities{}
	opts.Capabilities = caps
	if dc == nil {
		return nil
	}
	if dc.Sampling != nil {
		// includeContext is reduced to "none" (one server never sees another's
		// context), so the context sub-capability is not offered.
		caps.Sampling = &mcp.SamplingCapabilities{}
		if dc.Sampling.Tools != nil {
			caps.Sampling.Tools = &mcp.SamplingToolsCapabilities{}
			opts.CreateMessageWithToolsHandler = func(ctx context.Context, r *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
				ss, ctx, done, err := s.sessionFor(ctx, b, fixed, "sampling/createMessage")
				if err != nil {
					return nil, err
				}
				defer done()
				p := *r.Params
				p.IncludeContext = noContext(p.IncludeContext)
				return ss.CreateMessageWithTools(ctx, &p)
			}
		} else {
			opts.CreateMessageHandler = func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
				ss, ctx, done, err := s.sessionFor(ctx, b, fixed, "sampling/createMessage")
				if err != nil {
					return nil, err
				}
				defer done()
				p := *r.Params
				p.IncludeContext = noContext(p.IncludeContext)
				return ss.CreateMessage(ctx, &p)
			}
		}
	}
	var mws []mcp.Middleware
	if dc.Elicitation != nil {
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
	if dc.RootsV2 != nil {
		caps.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
		mws = append(mws, func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method != "roots/list" {
					return next(ctx, method, req)
				}
				ss, ctx, done, err := s.sessionFor(ctx, b, fixed, "roots/list")
				if err != nil {
					return nil, err
				}
				defer done()
				return ss.ListRoots(ctx, nil)
			}
		})
	}
	return mws
}

// relayElicit relays an upstream's elicitation/create to its client, with the
// message naming the server that asks.
func (s *Server) relayElicit(ctx context.Context, b *backend, fixed *mcp.ServerSession, params *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "elicitation/create needs params"}
	}
	ss, ctx, done, err := s.sessionFor(ctx, b, fixed, "elicitation/create")
	if err != nil {
		return nil, err
	}
	defer done()
	p := *params
	// The client can only name "the proxy"; the user must see which server
	// asks.
	p.Message = fmt.Sprintf("[%s] %s", b.name, p.Message)
	if p.ElicitationID != "" {
		s.elicit.remember(p.ElicitationID, b, ss)
	}
	return ss.Elicit(ctx, &p)
}

// noContext reduces an includeContext other than none to none: through the
// proxy, "thisServer" would mean every server, and one server must never see
// another's context.
func noContext(ic string) string {
	if ic == "" {
		return ""
	}
	return "none"
}

// sessionFor picks the downstream session an upstream's request belongs to:
// fixed, for a process of its own (isolation = "session"), else by
// attribution. It also returns the context to relay the request with: while
// the session has a call in flight on b, one that carries that call's
// incoming request (so that over streamable HTTP the request goes out on the
// call's response stream, which the client is reading, and not on the
// standalone GET stream, which it may not have opened) and that is cancelled
// with ctx, the upstream's request; done releases it.
func (s *Server) sessionFor(ctx context.Context, b *backend, fixed *mcp.ServerSession, method string) (*mcp.ServerSession, context.Context, func(), error) {
	ss, err := s.attribute(b, fixed, method)
	if err != nil {
		return nil, nil, nil, err
	}
	rctx, done := relayContext(ctx, b.callOf(ss))
	return ss, rctx, done, nil
}

// attribute picks the session for sessionFor.
func (s *Server) attribute(b *backend, fixed *mcp.ServerSession, method string) (*mcp.ServerSession, error) {
	if fixed != nil {
		return fixed, nil
	}
	var all []*mcp.ServerSession
	for ss := range s.server.Sessions() {
		if ss.InitializeParams() != nil {
			all = append(all, ss)
		}
	}
	switch len(all) {
	case 0:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("%s from %q: %v", method, b.name, errNoClient)}
	case 1:
		return all[0], nil
	}
	busy := b.busySessions()
	if len(busy) == 1 {
		return busy[0], nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf(
		"%s from %q cannot be attributed to one client: %d clients are connected and %d have calls in flight on this server; set isolation = \"session\" for it in the proxy config",
		method, b.name, len(all), len(busy))}
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

// rootsChanged tells every running upstream that the client's roots changed;
// they ask again with roots/list, which is relayed to the client.
func (s *Server) rootsChanged(ctx context.Context, _ *mcp.RootsListChangedRequest) {
	for _, b := range s.gen.Load().backends {
		st, up, _ := b.snapshot()
		if st != stateUp || up == nil {
			continue
		}
		up.NotifyRootsChanged()
	}
}

// elicitations maps URL-mode elicitation ids to the session that was asked, so
// that notifications/elicitation/complete reaches only that session.
type elicitations struct {
	mu   sync.Mutex
	byID map[string]elicitRoute // guarded by mu
}

type elicitRoute struct {
	b  *backend
	ss *mcp.ServerSession
}

func (e *elicitations) remember(id string, b *backend, ss *mcp.ServerSession) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.byID == nil {
		e.byID = make(map[string]elicitRoute)
	}
	e.byID[b.name+"\x00"+id] = elicitRoute{b, ss}
}

func (e *elicitations) take(id string, b *backend) *mcp.ServerSession {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.byID[b.name+"\x00"+id]
	if !ok {
		return nil
	}
	delete(e.byID, b.name+"\x00"+id)
	return r.ss
}
