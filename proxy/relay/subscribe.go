package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// subscriptions tracks which downstream sessions subscribed to which
// resources, so that each upstream is subscribed once per URI, unsubscribed
// when the last session leaves (by unsubscribing or by ending), and
// subscribed again after it restarts.
type subscriptions struct {
	mu      sync.Mutex
	by      map[string]map[*mcp.ServerSession]bool // outward URI -> sessions; guarded by mu
	watched map[*mcp.ServerSession]bool            // sessions whose end is watched; guarded by mu
}

// Subscribe serves a client's resources/subscribe (the SDK's
// SubscribeHandler): the upstream that owns the resource is subscribed
// once per URI.
func (s *Relay) Subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	server, original, uri, err := s.opts.Subscribable(ctx, req)
	if err != nil {
		return err
	}
	// The SDK records the subscription under the URI in the request once
	// this returns; resources/updated is sent with the canonical one.
	req.Params.URI = uri
	cs, b, err := s.opts.Upstream(ctx, server)
	if err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	if caps := b.Capabilities(); caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("server %q does not support resource subscriptions", server)}
	}
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	if s.subs.by == nil {
		s.subs.by = make(map[string]map[*mcp.ServerSession]bool)
		s.subs.watched = make(map[*mcp.ServerSession]bool)
	}
	if len(s.subs.by[uri]) == 0 {
		ctx, cancel := context.WithTimeout(ctx, b.CallTimeout())
		defer cancel()
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: original}); err != nil {
			return RPCError(server, err)
		}
		s.subs.by[uri] = make(map[*mcp.ServerSession]bool)
	}
	s.subs.by[uri][req.Session] = true
	if ss := req.Session; ss != nil && !s.subs.watched[ss] {
		s.subs.watched[ss] = true
		s.opts.WhenSessionEnds(ss, func() { s.dropSubscriber(ss) })
	}
	return nil
}

// Unsubscribe serves a client's resources/unsubscribe (the SDK's
// UnsubscribeHandler): the upstream is unsubscribed when its last
// subscriber leaves.
func (s *Relay) Unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	_, _, uri, ok, err := s.opts.Resolve(req.Params.URI)
	if err != nil {
		return err
	}
	if !ok {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	req.Params.URI = uri // as Subscribe recorded it
	s.subs.mu.Lock()
	subs := s.subs.by[uri]
	delete(subs, req.Session)
	last := subs != nil && len(subs) == 0
	if last {
		delete(s.subs.by, uri)
	}
	s.subs.mu.Unlock()
	if last {
		return s.unsubscribeUpstream(ctx, uri)
	}
	return nil
}

// unsubscribeUpstream ends the upstream subscription of an outward URI.
func (s *Relay) unsubscribeUpstream(ctx context.Context, uri string) error {
	server, original, ok := s.opts.Owners()(uri)
	if !ok {
		return nil
	}
	cs, b, err := s.opts.Upstream(ctx, server)
	if err != nil {
		return nil // not running: nothing to unsubscribe from
	}
	ctx, cancel := context.WithTimeout(ctx, b.CallTimeout())
	defer cancel()
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: original}); err != nil {
		return RPCError(server, err)
	}
	return nil
}

// dropSubscriber forgets the subscriptions of a session that ended, and
// unsubscribes upstreams from URIs nobody watches any more.
func (s *Relay) dropSubscriber(ss *mcp.ServerSession) {
	s.subs.mu.Lock()
	delete(s.subs.watched, ss)
	var gone []string
	for uri, subs := range s.subs.by {
		if subs[ss] {
			delete(subs, ss)
			if len(subs) == 0 {
				delete(s.subs.by, uri)
				gone = append(gone, uri)
			}
		}
	}
	s.subs.mu.Unlock()
	for _, uri := range gone {
		if err := s.unsubscribeUpstream(s.opts.Life, uri); err != nil {
			s.opts.Log.Warn("unsubscribing after a client left", "uri", uri, "err", err)
		}
	}
}

// Resubscribe subscribes a server that just (re)started to the URIs its
// clients still watch.
func (s *Relay) Resubscribe(ctx context.Context, b Backend, cs *mcp.ClientSession) {
	resourceOwner := s.opts.Owners() // one catalog's
	s.subs.mu.Lock()
	var uris []string
	for uri, subs := range s.subs.by {
		if server, _, ok := resourceOwner(uri); ok && server == b.Name() && len(subs) > 0 {
			uris = append(uris, uri)
		}
	}
	s.subs.mu.Unlock()
	for _, uri := range uris {
		_, original, _ := resourceOwner(uri)
		cctx, cancel := context.WithTimeout(ctx, b.CallTimeout())
		if err := cs.Subscribe(cctx, &mcp.SubscribeParams{URI: original}); err != nil {
			b.Log().Warn("subscribing again after a restart", "uri", uri, "err", err)
		}
		cancel()
	}
}

// RPCError keeps an upstream JSON-RPC error's code and data; other errors
// become internal errors that name the server. Whatever forwards a request
// to an upstream answers its failure so (subscribe here, reads, prompts and
// completion in proxy/route).
func RPCError(server string, err error) error {
	var rpcErr *jsonrpc.Error
	if errors.As(err, &rpcErr) {
		return rpcErr
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("upstream %q: %v", server, err)}
}
