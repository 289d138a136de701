package proxy

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/manifold-mcp/manifold/proxy/bridge"
	"github.com/manifold-mcp/manifold/proxy/confirm"
	"github.com/manifold-mcp/manifold/proxy/relay"
	"github.com/manifold-mcp/manifold/proxy/session"
)

// A call across the protocol eras (parked calls, sealed state, rounds of
// input, retries across replicas) is carried by proxy/bridge, and the era of
// a request is read by proxy/era; this file gives the bridge what it needs
// of the root (newBridges) and keeps the glue that must know the Server.

// RetryRelay carries the retry of a 2026-07-28 client's call parked on a
// legacy server to the replica that holds the call (bridge.RetryRelay).
type RetryRelay = bridge.RetryRelay

// newBridges returns the proxy's bridges (proxy/bridge) for s, once its
// relay is made.
func (s *Server) newBridges() *bridge.Bridges {
	return bridge.New(bridge.Options{StateKey: s.opts.StateKey, Methods: relay.Methods, Digest: confirm.Digest,
		Retries: s.opts.Retries, ErrNoReplica: ErrNoReplica, ErrUnreachable: ErrSharedUnavailable,
		MaxInputRounds: s.opts.MaxInputRounds, Relay: s.relay, Principal: s.principal})
}

// principal names who asks a request of ctx on ss (session.Principal).
func (s *Server) principal(ctx context.Context, ss *mcp.ServerSession, client string) string {
	return session.Principal(ctx, ss, s.opts.WaitForClient, client)
}

// startRetries serves the retries other replicas forward here, until Close.
func (s *Server) startRetries() {
	if s.opts.Retries == nil {
		return
	}
	s.run.wg.Add(1)
	go func() {
		defer s.run.wg.Done()
		s.opts.Retries.ServeRetries(s.run.life, s.bridge.ServeRetry)
	}()
}
